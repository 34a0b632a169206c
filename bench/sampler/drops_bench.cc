// Drops under load: 200 busy threads (each writing its context, as a service's request threads
// do) sampled with CPU at 1 ms and wall at 5 ms into a JFR file, for a fixed wall time. Prints
// the samples the session consumed and dropped (the sample buffer was full) and the buffer's
// memory, which bounds what sampling holds between drains.
//   bazel run -c opt //bench/sampler:drops_bench [-- threads seconds [extra options]]
// Output: one line "drops threads=T seconds=S consumed=C dropped=D buffer_slots=B
// slot_bytes=K threads_seen=N options=..." (bench/report.py reads it). threads_seen: the threads
// the session armed, which shows whether its own threads kept up with 200 busy ones.
// cpu_weight_ms, workers_cpu_ms: the CPU samples' weights times the interval, and the CPU time
// the busy threads used; wall_weight_ms, workers_wall_ms: the same for wall samples and the busy
// threads' lifetimes. A dropped sample's weight goes to its thread's next sample
// (signal_handler.h), so these stay close even when samples drop (less what threads ran before
// the session armed them, and the weight still carried when they exit).
// writer_cpu_ms, writer_wait_ms: the session's background thread's CPU time and time spent
// runnable but waiting for a CPU (/proc/self/task/TID/schedstat; -1 when unreadable), which tell
// whether it had too much work or too little CPU. wall_signals, wall_throttled_ticks: the wall
// signals sent, and the ticks whose signals the backpressure cut (wall_engine.h). peak_drain: the
// most samples one drain found waiting, of buffer_slots (how close the buffer came to full).
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "profiler/ctxprof.h"
#include "profiler/options.h"
#include "profiler/profiler.h"
#include "profiler/sampler/sample.h"

namespace {

std::atomic<uint64_t> g_sink{0};
std::atomic<int64_t> g_workers_cpu_ns{0};
std::atomic<int64_t> g_workers_wall_ns{0};

int64_t Nanos(clockid_t clock) {
  timespec now;
  clock_gettime(clock, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}

__attribute__((noinline)) void Busy(int index, const std::atomic<bool>* stop) {
  const int64_t started = Nanos(CLOCK_MONOTONIC);
  uint64_t value = static_cast<uint64_t>(index) + 1;
  uint64_t request = 0;
  while (!stop->load(std::memory_order_relaxed)) {
    ctxprof_set_trace_context(0, static_cast<uint64_t>(index) << 32 | ++request, request);
    for (int i = 0; i < 100000; ++i) {
      value = value * 6364136223846793005ull + 1442695040888963407ull;
      asm volatile("" : "+r"(value));
    }
  }
  ctxprof_clear_context();
  g_sink += value;
  g_workers_cpu_ns += Nanos(CLOCK_THREAD_CPUTIME_ID);
  g_workers_wall_ns += Nanos(CLOCK_MONOTONIC) - started;
}

// The background thread's schedstat: nanoseconds on CPU and waiting on a run queue.
bool WriterSchedStat(long long* cpu_ns, long long* wait_ns) {
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) return false;
  bool found = false;
  while (dirent* entry = readdir(tasks)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    const std::string task = std::string("/proc/self/task/") + entry->d_name;
    char name[32] = {};
    FILE* comm = fopen((task + "/comm").c_str(), "r");
    if (comm == nullptr) continue;
    const bool named = fgets(name, sizeof(name), comm) != nullptr;
    fclose(comm);
    if (!named || std::string(name) != "ctxprof-writer\n") continue;
    FILE* schedstat = fopen((task + "/schedstat").c_str(), "r");
    if (schedstat == nullptr) break;
    found = fscanf(schedstat, "%lld %lld", cpu_ns, wait_ns) == 2;
    fclose(schedstat);
    break;
  }
  closedir(tasks);
  return found;
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? atoi(argv[1]) : 200;
  const int seconds = argc > 2 ? atoi(argv[2]) : 10;
  char path[] = "/tmp/ctxprof-drops-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) {
    perror("mkstemp");
    return 1;
  }
  close(fd);
  std::string options = std::string("event=cpu,interval=1ms,wall=5ms,file=") + path;
  if (argc > 3) options += std::string(",") + argv[3];
  char error[512];
  if (ctxprof_start(options.c_str(), error, sizeof(error)) != 0) {
    fprintf(stderr, "start(%s) failed: %s\n", options.c_str(), error);
    return 1;
  }
  std::atomic<bool> stop{false};
  std::vector<std::thread> workers;
  for (int i = 0; i < threads; ++i) workers.emplace_back(Busy, i, &stop);
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  stop = true;
  for (std::thread& worker : workers) worker.join();
  const ctxprof::SessionStats running = ctxprof::Profiler::Global()->Stats();
  long long writer_cpu_ns = -1000000, writer_wait_ns = -1000000;
  WriterSchedStat(&writer_cpu_ns, &writer_wait_ns);
  if (ctxprof_stop() != 0) {
    fprintf(stderr, "stop failed\n");
    return 1;
  }
  const ctxprof::SessionStats stats = ctxprof::Profiler::Global()->Stats();
  // Started above, so the options parse.
  const ctxprof::Options parsed = ctxprof::ParseOptions(options).value();
  uint64_t cpu_weight = 0, wall_weight = 0;
  for (const ctxprof::AggregatedStack& stack : ctxprof::Profiler::Global()->Stacks()) {
    (stack.kind == ctxprof::SampleKind::kWall ? wall_weight : cpu_weight) += stack.weight;
  }
  // A slot holds the record's header and `depth` frames, cache-line aligned (sample_buffer.h).
  const size_t slot_bytes = (offsetof(ctxprof::SampleRecord, frames) +
                             static_cast<size_t>(parsed.depth) * sizeof(ctxprof::RawFrame) + 63) /
                            64 * 64;
  printf(
      "drops threads=%d seconds=%d consumed=%lu dropped=%lu buffer_slots=%u slot_bytes=%zu "
      "threads_seen=%lu writer_cpu_ms=%lld writer_wait_ms=%lld cpu_weight_ms=%lu "
      "workers_cpu_ms=%lld wall_weight_ms=%lu workers_wall_ms=%lld wall_signals=%lu "
      "wall_throttled_ticks=%lu peak_drain=%lu options=%s\n",
      threads, seconds, static_cast<unsigned long>(stats.consumed),
      static_cast<unsigned long>(stats.dropped), parsed.buffer_slots, slot_bytes,
      static_cast<unsigned long>(running.threads_seen), writer_cpu_ns / 1000000,
      writer_wait_ns / 1000000,
      static_cast<unsigned long>(cpu_weight * parsed.cpu_interval_ns / 1000000),
      static_cast<long long>(g_workers_cpu_ns.load() / 1000000),
      static_cast<unsigned long>(wall_weight * parsed.wall_interval_ns / 1000000),
      static_cast<long long>(g_workers_wall_ns.load() / 1000000),
      static_cast<unsigned long>(stats.wall_signals),
      static_cast<unsigned long>(stats.wall_throttled_ticks),
      static_cast<unsigned long>(stats.peak_drain), options.c_str());
  unlink(path);
  return 0;
}
