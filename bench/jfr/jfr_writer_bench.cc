// JfrWriter throughput and size on a steady profiling workload:
//  * 16 threads sampled every 10 ms (ticks of a 2.4 GHz TSC-like clock advance accordingly);
//  * 32-frame Java stacks of 2,000 methods; a fraction of samples (argument 1, in percent) hit
//    a stack never seen before (a new combination of known methods), the rest repeat a stack
//    seen before:
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

// The frames of stack number `index`, a function of it alone (16 random bits a frame: 13 for
// its method, 3 for its bci): repeating a stack reads no memory. The writer's records come
// from the sampler's buffers through the session's drain, which has just copied them; a
// stored copy of every stack seen would cost the bench a cache miss per repeat instead.
void FillStack(uint64_t index, RawFrame* frames) {
  static_assert(kDepth % 4 == 0, "four frames per 64 random bits");
  uint64_t state = index * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL;
  for (int i = 0; i < kDepth; i += 4) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;  // an LCG step
    uint64_t bits = (state ^ (state >> 29)) * 0xBF58476D1CE4E5B9ULL;  // its weak low bits mixed
    bits ^= bits >> 32;
    for (int j = 0; j < 4; j++, bits >>= 16) {
      frames[i + j] = RawFrame{1 + (((bits & 0xFFFF) >> 3) * kMethods >> 13),
                               static_cast<int32_t>(bits & 7), FrameKind::kJavaJit};
    }
  }
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
  size_t seen = 100;  // stacks 0 .. seen - 1 have been sampled; repeats pick one of them
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
    if (static_cast<int>(NextRandom(&random) % 100) < new_stack_percent) {
      pick = seen++;
    } else {
      const size_t pool =
          hot_stacks && NextRandom(&random) % 10 != 0 ? std::min<size_t>(1000, seen) : seen;
      pick = NextRandom(&random) % pool;
    }
    FillStack(pick, sample.frames);
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
  state.counters["distinct_stacks"] = static_cast<double>(seen);
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
