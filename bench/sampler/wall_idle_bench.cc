// What the wall sampler costs for idle threads and for threads that keep waking up: `idle`
// threads blocked in read(2) on pipes for the whole run and `waking` threads that each cycle
// 2 ms of CPU and 8 ms of sleep, sampled with event=wall,interval=5ms for `seconds`. Idle
// threads are what repeats exist for (a check of the CPU clock instead of a signal); waking ones
// take the check path after every witness, where a wake-up must be noticed. Prints one line per
// run:
//   wall_idle sampler_cpu_ms=N process_cpu_ms=N wall_signals=N wall_intervals=N samples=N
// sampler_cpu_ms: the CPU of the ctxprof-wall thread (its /proc schedstat, exact to the ns);
// process_cpu_ms: the whole process's CPU from start to stop (the waking threads' spin included).
//   bazel run -c opt //bench/sampler:wall_idle_bench -- [idle [waking [seconds]]]
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "profiler/ctxprof.h"
#include "profiler/profiler.h"

namespace {

std::atomic<bool> g_stop{false};
std::atomic<uint64_t> g_sink{0};

double ProcessCpuMillis() {
  timespec now;
  if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now) != 0) {
    perror("clock_gettime(CLOCK_PROCESS_CPUTIME_ID)");
    exit(1);
  }
  return static_cast<double>(now.tv_sec) * 1e3 + static_cast<double>(now.tv_nsec) / 1e6;
}

uint64_t ThreadNanos(clockid_t clock) {
  timespec now;
  clock_gettime(clock, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000000u + static_cast<uint64_t>(now.tv_nsec);
}

// The CPU milliseconds of this process's thread named `name` (its schedstat's first field), -1
// when there is none.
double ThreadCpuMillisByName(const char* name) {
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) {
    perror("opendir(/proc/self/task)");
    exit(1);
  }
  double found = -1;
  while (dirent* entry = readdir(tasks)) {
    if (entry->d_name[0] == '.') continue;
    const std::string task = std::string("/proc/self/task/") + entry->d_name;
    char comm[64] = {};
    FILE* file = fopen((task + "/comm").c_str(), "re");
    if (file == nullptr) continue;  // exited
    const bool named = fgets(comm, sizeof(comm), file) != nullptr &&
                       strncmp(comm, name, strlen(name)) == 0 && comm[strlen(name)] == '\n';
    fclose(file);
    if (!named) continue;
    file = fopen((task + "/schedstat").c_str(), "re");
    unsigned long long nanos;
    if (file != nullptr && fscanf(file, "%llu", &nanos) == 1) found = nanos / 1e6;
    if (file != nullptr) fclose(file);
  }
  closedir(tasks);
  return found;
}

void Waking() {
  while (!g_stop.load(std::memory_order_relaxed)) {
    const uint64_t start = ThreadNanos(CLOCK_THREAD_CPUTIME_ID);
    uint64_t value = start;
    while (ThreadNanos(CLOCK_THREAD_CPUTIME_ID) - start < 2000000) {
      for (int i = 0; i < 1000; ++i) value = value * 6364136223846793005ull + 1;
    }
    g_sink += value;
    std::this_thread::sleep_for(std::chrono::milliseconds(8));  // retries after EINTR
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int idle = argc > 1 ? atoi(argv[1]) : 200;
  const int waking = argc > 2 ? atoi(argv[2]) : 8;
  const int seconds = argc > 3 ? atoi(argv[3]) : 3;
  std::vector<int> write_ends;
  std::vector<std::thread> threads;
  for (int i = 0; i < idle; ++i) {
    int fds[2];
    if (pipe(fds) != 0) {
      perror("pipe");
      return 1;
    }
    write_ends.push_back(fds[1]);
    threads.emplace_back([fd = fds[0]] {
      char byte;
      while (read(fd, &byte, 1) < 0) {  // EINTR cannot happen (SA_RESTART) but costs nothing
      }
      close(fd);
    });
  }
  for (int i = 0; i < waking; ++i) threads.emplace_back(Waking);
  const double before = ProcessCpuMillis();
  char error[512];
  if (ctxprof_start("event=wall,interval=5ms", error, sizeof(error)) != 0) {
    fprintf(stderr, "ctxprof_start failed: %s\n", error);
    return 1;
  }
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  const double sampler_ms = ThreadCpuMillisByName("ctxprof-wall");
  const ctxprof::SessionStats stats = ctxprof::Profiler::Global()->Stats();
  ctxprof_stop();
  const double process_ms = ProcessCpuMillis() - before;
  g_stop = true;
  for (int fd : write_ends) {
    if (write(fd, "x", 1) != 1) perror("write");
    close(fd);
  }
  for (std::thread& thread : threads) thread.join();
  printf(
      "wall_idle sampler_cpu_ms=%.1f process_cpu_ms=%.1f wall_signals=%lu wall_intervals=%lu "
      "samples=%lu idle=%d waking=%d seconds=%d\n",
      sampler_ms, process_ms, static_cast<unsigned long>(stats.wall_signals),
      static_cast<unsigned long>(stats.wall_intervals), static_cast<unsigned long>(stats.consumed),
      idle, waking, seconds);
  return 0;
}
