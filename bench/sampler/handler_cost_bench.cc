// In-handler cost per sample: clock at handler entry to publication, as a distribution, for
// native stacks of about 10, 50 and 200 frames, with each stack walker on the code it is meant
// for. Real signals: the cpu engine at 1 ms interrupts a thread spinning at the bottom of a
// recursion, built with or without frame pointers (spin_chain.h). Output: one row per walker
// (`unwind=` value), chain (fp = built with frame pointers, nofp = without) and depth.
//   bazel run -c opt //bench/sampler:handler_cost_bench [-- samples_per_configuration]
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "bench/sampler/spin_chain.h"
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

// One row of the table: a walker (the unwind= option) on one build of the spinning recursion.
struct Configuration {
  const char* unwind;
  bool frame_pointers;  // which build of the chain (spin_chain.h)
};

struct Result {
  double p50_ns, p90_ns, p99_ns, mean_ns;
  double mean_frames;
  size_t samples;
};

Result MeasureHandler(int recursion, const Configuration& configuration, double ticks_per_ns) {
  static uint64_t ticks[kMaxSamples];
  HandlerCostRecorder recorder;
  recorder.ticks = ticks;
  recorder.capacity = g_samples_wanted;
  char error[512];
  const std::string options =
      std::string("event=cpu,interval=1ms,depth=512,clock=tsc,unwind=") + configuration.unwind;
  if (ctxprof_start(options.c_str(), error, sizeof(error)) != 0) {
    fprintf(stderr, "start failed: %s\n", error);
    exit(1);
  }
  g_stop = false;
  const auto spin = configuration.frame_pointers ? &bench::SpinWithFramePointers
                                                 : &bench::SpinWithoutFramePointers;
  std::thread spinner([spin, recursion] { g_sink += spin(recursion, &g_stop); });
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
  auto created = ctxprof::TscClock::Create();
  if (!created.ok()) {
    fprintf(stderr, "needs an invariant TSC: %s\n", created.status().message().c_str());
    return 1;
  }
  const ctxprof::TscClock* tsc = created.value().get();
  const double ticks_per_ns = static_cast<double>(tsc->TicksPerSecond()) / 1e9;
  printf("%-9s %-5s %-9s %8s %8s %8s %8s %8s %8s\n", "unwind", "chain", "recursion", "frames",
         "samples", "p50_ns", "p90_ns", "p99_ns", "mean_ns");
  // The DWARF walkers on code without frame pointers (what they are for); the frame-pointer
  // walker on code with them (its cost) and without (what it loses: the frames column).
  const ctxprof::Configuration configurations[] = {
      {"dwarf", false}, {"libunwind", false}, {"fp", true}, {"fp", false}};
  // The chain's entry and bottom and the thread's base (thread start, std::thread glue) add ~5
  // frames to the recursion.
  for (const ctxprof::Configuration& configuration : configurations) {
    for (int recursion : {6, 46, 196}) {
      const ctxprof::Result r = ctxprof::MeasureHandler(recursion, configuration, ticks_per_ns);
      printf("%-9s %-5s %-9d %8.1f %8zu %8.0f %8.0f %8.0f %8.0f\n", configuration.unwind,
             configuration.frame_pointers ? "fp" : "nofp", recursion, r.mean_frames, r.samples,
             r.p50_ns, r.p90_ns, r.p99_ns, r.mean_ns);
      fflush(stdout);
    }
  }
  return 0;
}
