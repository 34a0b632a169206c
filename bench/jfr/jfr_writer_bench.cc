// JfrWriter throughput and size on a steady profiling workload:
//  * 16 threads sampled every 10 ms (ticks of a 2.4 GHz TSC-like clock advance accordingly);
//  * 32-frame Java stacks; a fraction of samples (argument 1, in percent) hit a stack never
//    seen before (a new combination of known methods), the rest repeat a stack seen before:
//    with argument 2 = 0 any of them uniformly (worst case for caches: every lookup misses),
//    with 1 the way profiles look, 90 % of repeats from the 1,000 hottest stacks;
//  * every thread runs under a context (trace id, span id, 3 attributes) that changes every
//    20 samples on average; flushes every second of recording time;
//  * 2,000,000 samples a run: the workload does not depend on the writer's speed (with 10 % new
//    stacks, a time-bound run of a faster writer would keep more stacks, and at the stack cache
//    limit, 64 MB by default, drop them). Repeat a run with --benchmark_repetitions.
// Reports samples/s (items_per_second), bytes_per_sample (file size / samples) and
// close_ns_per_sample: the writer thread's CPU time in Close, which folds the file's per-flush
// chunks into one (CompactRecordingFile), per sample; the samples/s do not include it.
//
// Run: bazel run -c opt //bench/jfr:jfr_writer_bench
#include <benchmark/benchmark.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "bench/jfr/bench_writer.h"
#include "profiler/jfr_events/jfr_writer.h"
#include "tests/jfr/synthetic.h"

namespace ctxprof {
namespace {

constexpr int kThreads = 16;
constexpr int kDepth = 32;
constexpr int kMethods = 2000;

double ThreadCpuNanos() {
  timespec now;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) * 1e9 + static_cast<double>(now.tv_nsec);
}

uint64_t NextRandom(uint64_t* state) {  // xorshift64: cheap, deterministic
  *state ^= *state << 13;
  *state ^= *state >> 7;
  *state ^= *state << 17;
  return *state;
}

void BM_WriterSteadyState(benchmark::State& state) {
  const int new_stack_percent = static_cast<int>(state.range(0));
  const bool hot_stacks = state.range(1) != 0;
  const char* tmpdir = getenv("TMPDIR");
  const std::string path =
      std::string(tmpdir != nullptr ? tmpdir : "/tmp") + "/jfr_writer_bench.jfr";

  FakeClock clock;
  FakeFrameResolver frames;
  FakeThreadResolver threads;
  std::string error;
  std::unique_ptr<Dictionary> dictionary = Dictionary::Create(Dictionary::Options(), &error);
  AttributeRegistry attributes;
  if (!attributes.Register({"http.route", "tenant", "region"}, &error)) abort();
  std::vector<uint32_t> values;
  for (int i = 0; i < 200; i++) values.push_back(dictionary->Intern("value-" + std::to_string(i)));

  StatusOr<std::unique_ptr<JfrWriter>> opened = OpenBenchWriter(
      path, /*all_contexts=*/false, &clock, &frames, &threads, dictionary.get(), &attributes);
  if (!opened.ok()) {
    state.SkipWithError(opened.status().message().c_str());
    return;
  }
  JfrWriter* writer = opened.value().get();

  uint64_t random = 88172645463325252ULL;
  // Stacks seen so far; repeated samples pick one of them. Each frame is kept as its method
  // index and bytecode index in 16 bits (64 bytes a stack) and expanded into the sample just
  // before Add, as the session's drain copies each record just before it hands it over: the
  // bench itself reads one or two cold lines per repeat, not the eight of 32 RawFrames.
  std::vector<uint16_t> stacks;  // kDepth per stack
  static_assert(kMethods * 8 <= UINT16_MAX, "a frame's method and bci fit in 16 bits");
  auto new_stack = [&]() {
    for (int i = 0; i < kDepth; i++) {
      const uint64_t method = NextRandom(&random) % kMethods;
      stacks.push_back(static_cast<uint16_t>(method * 8 + NextRandom(&random) % 8));
    }
  };
  for (int i = 0; i < 100; i++) new_stack();
  ContextSnapshot contexts[kThreads] = {};
  static SampleRecord sample;
  sample.kind = SampleKind::kCpu;
  sample.engine = Engine::kPerfCpuClock;
  sample.state = ThreadState::kRunning;
  sample.weight = 1;
  sample.frame_count = kDepth;
  const uint64_t spacing = clock.TicksPerSecond() / 100 / kThreads;  // 10 ms per thread
  uint64_t ticks = clock.Now();
  int thread = 0;

  for (auto _ : state) {
    ticks += spacing;
    thread = (thread + 1) % kThreads;
    ContextSnapshot& context = contexts[thread];
    if (NextRandom(&random) % 20 == 0 || context.span_id == 0) {
      context.trace_id_high = NextRandom(&random);
      context.trace_id_low = NextRandom(&random);
      context.span_id = NextRandom(&random);
      for (int slot = 0; slot < 3; slot++)
        context.attributes[slot] = values[NextRandom(&random) % values.size()];
    }
    size_t pick;
    const size_t seen = stacks.size() / kDepth;
    if (static_cast<int>(NextRandom(&random) % 100) < new_stack_percent) {
      new_stack();
      pick = seen;
    } else {
      const size_t pool =
          hot_stacks && NextRandom(&random) % 10 != 0 ? std::min<size_t>(1000, seen) : seen;
      pick = NextRandom(&random) % pool;
    }
    const uint16_t* stack = &stacks[pick * kDepth];
    for (int i = 0; i < kDepth; i++) {
      sample.frames[i] =
          RawFrame{1 + stack[i] / 8u, static_cast<int32_t>(stack[i] % 8), FrameKind::kJavaJit};
    }
    sample.ticks = ticks;
    sample.tid = 1000 + thread;
    sample.context = context;
    if (const Status added = writer->Add(sample); !added.ok()) {
      state.SkipWithError(added.message().c_str());
      return;
    }
  }
  clock.Set(ticks + spacing);
  const double close_start = ThreadCpuNanos();
  const Status closed = writer->Close();
  const double close_nanos = ThreadCpuNanos() - close_start;
  if (!closed.ok()) {
    state.SkipWithError(closed.message().c_str());
    return;
  }
  struct stat st;
  stat(path.c_str(), &st);
  state.SetItemsProcessed(state.iterations());
  state.counters["bytes_per_sample"] =
      static_cast<double>(st.st_size) / static_cast<double>(state.iterations());
  state.counters["distinct_stacks"] = static_cast<double>(stacks.size() / kDepth);
  state.counters["close_ns_per_sample"] = close_nanos / static_cast<double>(state.iterations());
  unlink(path.c_str());
}

// Arguments: percent of samples whose stack was never seen before; hot stacks (1) or uniform (0).
BENCHMARK(BM_WriterSteadyState)
    ->ArgNames({"new_stack_percent", "hot"})
    ->Args({10, 1})
    ->Args({10, 0})
    ->Args({1, 1})
    ->Args({1, 0})
    ->Unit(benchmark::kNanosecond)
    ->Iterations(2000000);

}  // namespace
}  // namespace ctxprof

BENCHMARK_MAIN();
