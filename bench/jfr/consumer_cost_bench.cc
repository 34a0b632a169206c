// The background thread's CPU per sample of a `event=cpu,interval=1ms,file=…` session: what
// Session::DrainSamples and Recording::Tick do with each drained record (the reorderer, the JFR
// writer, the aggregator for dumps), on the JVM overhead workload's shape
// (docs/PERFORMANCE.md): 2 threads sampled every 1 ms, 40-frame Java stacks drawn from a few hot
// ones, every sample under a context of its own (a new span per request), a tick every 20 ms of
// clock time. That CPU is the profiled process's, so it counts in the profiling overhead.
//
// Prints CPU time and minor page faults per sample over the measured ticks (after a warm-up),
// e.g. for `valgrind --tool=callgrind` (instructions) or `perf stat`.
//
// Run: bazel run -c opt //bench/jfr:consumer_cost_bench -- [samples]
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "profiler/options.h"
#include "profiler/session/aggregator.h"
#include "profiler/session/recording.h"
#include "tests/jfr/synthetic.h"

namespace ctxprof {
namespace {

constexpr int kThreads = 2;
constexpr int kDepth = 40;
constexpr int kHotStacks = 16;
constexpr uint64_t kTicksPerSecond = 2400000000ULL;  // FakeClock's default
constexpr uint64_t kIntervalTicks = kTicksPerSecond / 1000;
constexpr int kSamplesPerTick = 20 * kThreads;  // 20 ms between drains

uint64_t NextRandom(uint64_t* state) {  // xorshift64: cheap, deterministic
  *state ^= *state << 13;
  *state ^= *state >> 7;
  *state ^= *state << 17;
  return *state;
}

double CpuSeconds() {
  timespec now;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return now.tv_sec + now.tv_nsec / 1e9;
}

long MinorFaults() {
  rusage usage;
  getrusage(RUSAGE_THREAD, &usage);
  return usage.ru_minflt;
}

int Run(int samples) {
  const char* tmpdir = getenv("TMPDIR");
  const std::string path = std::string(tmpdir != nullptr ? tmpdir : "/tmp") +
                           "/consumer_cost_bench." + std::to_string(getpid()) + ".jfr";
  StatusOr<Options> parsed = ParseOptions("event=cpu,interval=1ms,file=" + path);
  if (!parsed.ok()) {
    fprintf(stderr, "%s\n", parsed.status().message().c_str());
    return 1;
  }
  const Options& options = parsed.value();
  std::string error;
  std::unique_ptr<Dictionary> dictionary = Dictionary::Create(Dictionary::Options(), &error);
  AttributeRegistry attributes;
  if (dictionary == nullptr || !attributes.Register({"endpoint"}, &error)) {
    fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  const uint32_t endpoint = dictionary->Intern("/checkout");
  FakeClock clock(kTicksPerSecond);
  RecordingSettings settings;
  settings.engine = "cpu";
  settings.interval_nanos = 1000000;
  Aggregator aggregator(attributes.names(), dictionary.get());
  RecordingInputs inputs;
  inputs.settings = settings;
  inputs.clock = &clock;
  inputs.dictionary = dictionary.get();
  inputs.attributes = &attributes;
  inputs.dropped_samples = [] { return uint64_t{0}; };
  inputs.frames = std::make_unique<FakeFrameResolver>();
  inputs.threads = std::make_unique<FakeThreadResolver>();
  inputs.downstream = &aggregator;
  StatusOr<std::unique_ptr<Recording>> opened = Recording::Open(options, std::move(inputs));
  if (!opened.ok()) {
    fprintf(stderr, "%s\n", opened.status().message().c_str());
    return 1;
  }
  Recording* recording = opened.value().get();
  uint64_t random = 88172645463325252ULL;
  std::vector<std::vector<RawFrame>> stacks(kHotStacks, std::vector<RawFrame>(kDepth));
  for (std::vector<RawFrame>& stack : stacks) {
    for (RawFrame& frame : stack) {
      frame = RawFrame{1 + NextRandom(&random) % 500,
                       static_cast<int32_t>(NextRandom(&random) % 64), FrameKind::kJavaJit};
    }
  }
  std::unique_ptr<SampleRecord> record(new SampleRecord());
  uint64_t span = 1;
  const int warmup_ticks = 100;  // 2 s: the writer's pools and the reorderer reach steady state
  const int ticks = warmup_ticks + (samples + kSamplesPerTick - 1) / kSamplesPerTick;
  double cpu_start = 0;
  long faults_start = 0;
  for (int tick = 0; tick < ticks; tick++) {
    if (tick == warmup_ticks) {
      cpu_start = CpuSeconds();
      faults_start = MinorFaults();
    }
    const uint64_t tick_start = clock.Now();
    for (int i = 0; i < kSamplesPerTick; i++) {
      const std::vector<RawFrame>& stack = stacks[NextRandom(&random) % kHotStacks];
      record->ticks = tick_start + (i / kThreads) * kIntervalTicks + i % kThreads;
      record->tid = 1001 + 2 * (i % kThreads);
      record->kind = SampleKind::kCpu;
      record->engine = Engine::kPerfCpuClock;
      record->flags = 0;
      record->state = ThreadState::kRunning;
      record->weight = 1;
      record->virtual_thread_id = 0;
      record->context = ContextSnapshot{};
      record->context.trace_id_low = span / 8 + 1;
      record->context.span_id = span++;
      record->context.attributes[0] = endpoint;
      record->frame_count = kDepth;
      std::copy(stack.begin(), stack.end(), record->frames);
      recording->Consume(*record);  // and, once written, the aggregator (as in a session)
    }
    clock.Set(tick_start + 20 * kIntervalTicks);
    recording->Tick([] {});
  }
  const double cpu = CpuSeconds() - cpu_start;
  const long faults = MinorFaults() - faults_start;
  const int measured = (ticks - warmup_ticks) * kSamplesPerTick;
  if (const Status closed = recording->Close(); !closed.ok()) {
    fprintf(stderr, "%s\n", closed.message().c_str());
    return 1;
  }
  unlink(path.c_str());
  printf("samples=%d cpu_per_sample_us=%.2f minor_faults_per_sample=%.3f\n", measured,
         cpu / measured * 1e6, static_cast<double>(faults) / measured);
  return 0;
}

}  // namespace
}  // namespace ctxprof

int main(int argc, char** argv) {
  const int samples = argc > 1 ? atoi(argv[1]) : 20000;
  if (samples <= 0) {
    fprintf(stderr, "usage: consumer_cost_bench [samples > 0]\n");
    return 2;
  }
  return ctxprof::Run(samples);
}
