// In-handler cost per sample: clock at handler entry to publication, as a distribution, for
// native stacks of about 10, 50 and 200 frames, with both stack walkers. Real signals: the cpu
// engine at 1 ms interrupts a thread spinning at the bottom of a recursion.
//   bazel run -c opt //bench/sampler:handler_cost_bench [-- samples_per_configuration]
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "profiler/ctxprof.h"
#include "profiler/profiler.h"
#include "profiler/sampler/signal_handler.h"
#include "profiler/sampler/tsc_clock.h"

namespace ctxprof {
namespace {

constexpr uint32_t kMaxSamples = 3000;
uint32_t g_samples_wanted = kMaxSamples;  // per configuration; argv[1] can lower it
std::atomic<bool> g_stop{false};
std::atomic<uint64_t> g_sink{0};

__attribute__((noinline)) uint64_t SpinAtDepth(int levels) {
  if (levels > 0) {
    const uint64_t result = SpinAtDepth(levels - 1);
    asm volatile("" ::: "memory");  // no tail call: every level keeps a frame
    return result + 1;
  }
  uint64_t value = 1;
  while (!g_stop.load(std::memory_order_relaxed)) {
    for (int i = 0; i < 100000; ++i) {
      value = value * 6364136223846793005ull + 1442695040888963407ull;
      asm volatile("" : "+r"(value));
    }
  }
  return value;
}

struct Result {
  double p50_ns, p90_ns, p99_ns, mean_ns;
  double mean_frames;
  size_t samples;
};

Result Measure(int recursion, const char* unwind, double ticks_per_ns) {
  static uint64_t ticks[kMaxSamples];
  HandlerCostRecorder recorder;
  recorder.ticks = ticks;
  recorder.capacity = g_samples_wanted;
  char error[512];
  const std::string options =
      std::string("event=cpu,interval=1ms,depth=512,clock=tsc,unwind=") + unwind;
  if (ctxprof_start(options.c_str(), error, sizeof(error)) != 0) {
    fprintf(stderr, "start failed: %s\n", error);
    exit(1);
  }
  g_stop = false;
  std::thread spinner([recursion] { g_sink += SpinAtDepth(recursion); });
  SignalHandler::SetCostRecorder(&recorder);
  while (recorder.next.load() < g_samples_wanted) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  SignalHandler::SetCostRecorder(nullptr);
  g_stop = true;
  spinner.join();
  ctxprof_stop();
  std::vector<uint64_t> sorted(ticks, ticks + g_samples_wanted);
  std::sort(sorted.begin(), sorted.end());
  double sum = 0;
  for (uint64_t t : sorted) sum += static_cast<double>(t);
  // Frames per sample of the spinning thread's samples (they dominate the session).
  double frames = 0, samples = 0;
  for (const AggregatedStack& stack : Profiler::Global()->Stacks()) {
    frames += static_cast<double>(stack.frames.size() * stack.samples);
    samples += static_cast<double>(stack.samples);
  }
  auto at = [&](double q) {
    return static_cast<double>(sorted[static_cast<size_t>(q * (sorted.size() - 1))]) / ticks_per_ns;
  };
  return {at(0.5),          at(0.9),      at(0.99), sum / sorted.size() / ticks_per_ns,
          frames / samples, sorted.size()};
}

}  // namespace
}  // namespace ctxprof

int main(int argc, char** argv) {
  if (argc > 1) {
    const long wanted = atol(argv[1]);
    if (wanted < 10 || wanted > static_cast<long>(ctxprof::kMaxSamples)) {
      fprintf(stderr, "samples per configuration '%s': use 10..%u\n", argv[1],
              ctxprof::kMaxSamples);
      return 2;
    }
    ctxprof::g_samples_wanted = static_cast<uint32_t>(wanted);
  }
  std::string reason;
  auto tsc = ctxprof::TscClock::Create(&reason);
  if (tsc == nullptr) {
    fprintf(stderr, "needs an invariant TSC: %s\n", reason.c_str());
    return 1;
  }
  const double ticks_per_ns = static_cast<double>(tsc->TicksPerSecond()) / 1e9;
  printf("%-6s %-9s %8s %8s %8s %8s %8s %8s\n", "unwind", "recursion", "frames", "samples",
         "p50_ns", "p90_ns", "p99_ns", "mean_ns");
  // The thread's own base frames (thread start, std::thread glue) add ~4 to the recursion.
  for (const char* unwind : {"dwarf", "fp"}) {
    for (int recursion : {6, 46, 196}) {
      const ctxprof::Result r = ctxprof::Measure(recursion, unwind, ticks_per_ns);
      printf("%-6s %-9d %8.1f %8zu %8.0f %8.0f %8.0f %8.0f\n", unwind, recursion, r.mean_frames,
             r.samples, r.p50_ns, r.p90_ns, r.p99_ns, r.mean_ns);
      fflush(stdout);
    }
  }
  return 0;
}
