// CPU-time overhead of profiling the 3:1 program: threads A and B do a fixed amount of work
// (3 units and 1 unit), and we measure the process's CPU time (CLOCK_PROCESS_CPUTIME_ID: both
// workers, the profiler's background thread and the handlers) from before ctxprof_start to
// after ctxprof_stop. Configurations run interleaved round by round so machine noise (other
// builds on this host) hits all of them alike; we report medians and the median per-round ratio
// to the unprofiled run.
//   bazel run -c opt //bench/sampler:overhead_bench [-- rounds [work_scale]]
// work_scale multiplies the work per run (default 1: ~1.4 s of CPU), which shrinks the share of
// the fixed per-session cost (start, stop, background thread wake-ups) in the ratio.
#include <time.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "bench/sampler/interleaved_rounds.h"
#include "profiler/ctxprof.h"
#include "profiler/profiler.h"

namespace {

constexpr uint64_t kUnitIterations = 250 * 1000 * 1000;  // ~0.3 s of CPU per unit here
uint64_t g_work_scale = 1;
std::atomic<uint64_t> g_sink{0};

__attribute__((noinline)) void Work(uint64_t iterations) {
  uint64_t value = 1;
  for (uint64_t i = 0; i < iterations; ++i) {
    value = value * 6364136223846793005ull + 1442695040888963407ull;
    asm volatile("" : "+r"(value));
  }
  g_sink += value;
}

double ProcessCpuSeconds() {
  timespec now;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9;
}

// Returns the process CPU seconds of one run; *samples = samples the session took.
double RunOnce(const char* options, uint64_t* samples) {
  *samples = 0;
  const double before = ProcessCpuSeconds();
  if (options != nullptr) {
    char error[512];
    if (ctxprof_start(options, error, sizeof(error)) != 0) {
      fprintf(stderr, "start(%s) failed: %s\n", options, error);
      exit(1);
    }
  }
  std::thread a([] { Work(3 * kUnitIterations * g_work_scale); });
  std::thread b([] { Work(kUnitIterations * g_work_scale); });
  a.join();
  b.join();
  if (options != nullptr) ctxprof_stop();
  const double cpu = ProcessCpuSeconds() - before;
  if (options != nullptr) *samples = ctxprof::Profiler::Global()->Stats().consumed;
  return cpu;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 7;
  g_work_scale = argc > 2 ? static_cast<uint64_t>(atoll(argv[2])) : 1;
  const std::vector<const char*> configs = {
      nullptr,
      "event=cpu,interval=10ms",
      "event=cpu,interval=1ms",
      "event=cpu,interval=10ms,unwind=fp",
      "event=cpu,interval=1ms,unwind=fp",
      "event=ctimer,interval=1ms",
  };
  uint64_t sample_count = 0;
  RunOnce(nullptr, &sample_count);  // warm-up
  const std::vector<ctxprof::bench::ConfigurationResults> results = ctxprof::bench::RunInterleaved(
      configs.size(), rounds,
      [&](size_t index, uint64_t* samples) { return RunOnce(configs[index], samples); });
  std::vector<std::string> names;
  for (const char* config : configs) names.push_back(config != nullptr ? config : "off");
  ctxprof::bench::PrintOverheadTable("configuration", "samples", names, results);
  return 0;
}
