// How many closed spans the writer thread turns into ctxprof.Context events per second: each
// iteration, `threads` span logs (argument) receive 256 closed spans each, written outside the
// timed region as their threads would; the timed region is the writer thread's whole share:
// SpanDrain::Drain (read the logs, map the times), JfrWriter::AddSpan, and with contexts=all
// SettleSpans writing every span as an event (flushes included, every second of span time); with
// contexts=triggered (second argument 0) no span holds a record, so none is written: the cost
// every request's span adds at any sampling rate. Reports spans/s (items_per_second) and bytes
// per span of the file.
//
// BM_DrainSpansWindowed is the same with the session's reorder window: spans of 20 µs (a busy
// service's requests) and the spans settled only up to 50 ms before the drain, as
// Recording::Tick does, so that every thread holds ~2,500 pending spans that records could still
// fall in: the memory a thread's spans take and the cost of keeping them.
//
// Run: bazel run -c opt //bench/jfr:span_drain_bench
#include <benchmark/benchmark.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <unordered_set>

#include "bench/jfr/bench_writer.h"
#include "context/context_map.h"
#include "profiler/jfr_events/jfr_writer.h"
#include "profiler/session/span_drain.h"
#include "tests/jfr/synthetic.h"

namespace ctxprof {
namespace {

constexpr int kSpansPerLog = 256;
constexpr int32_t kFirstTid = 1000;

// `span_nanos`: each span's length; `window_nanos`: how far behind the last span's end the
// spans are settled.
void DrainSpans(benchmark::State& state, uint64_t span_nanos, uint64_t window_nanos) {
  const int threads = static_cast<int>(state.range(0));
  const bool all_contexts = state.range(1) != 0;
  const char* tmpdir = getenv("TMPDIR");
  const std::string path =
      std::string(tmpdir != nullptr ? tmpdir : "/tmp") + "/span_drain_bench.jfr";
  std::string error;
  ContextMap* map = ContextMap::Create(kFirstTid + threads, &error);
  std::unique_ptr<Dictionary> dictionary = Dictionary::Create(Dictionary::Options(), &error);
  AttributeRegistry attributes;
  if (map == nullptr || dictionary == nullptr ||
      !attributes.Register({"http.route", "tenant"}, &error)) {
    state.SkipWithError(error.c_str());
    return;
  }
  std::vector<SpanLog*> logs;
  for (int i = 0; i < threads; i++) logs.push_back(map->span_logs().Claim(kFirstTid + i));
  const uint32_t routes[4] = {dictionary->Intern("/checkout"), dictionary->Intern("/search"),
                              dictionary->Intern("/cart"), dictionary->Intern("/login")};

  // Not named "tsc": span times carry kMonotonicFlag and pass unchanged, in its ticks.
  FakeClock clock;
  FakeFrameResolver frames;
  FakeThreadResolver names;
  StatusOr<std::unique_ptr<JfrWriter>> opened =
      OpenBenchWriter(path, all_contexts, &clock, &frames, &names, dictionary.get(), &attributes);
  if (!opened.ok()) {
    state.SkipWithError(opened.status().message().c_str());
    return;
  }
  JfrWriter* writer = opened.value().get();
  SpanDrain drain(map, &clock);

  const uint64_t span_ticks = clock.TicksPerSecond() * span_nanos / 1000000000;
  const uint64_t window_ticks = clock.TicksPerSecond() * window_nanos / 1000000000;
  uint64_t ticks = clock.Now();
  uint64_t span_id = 1;
  std::unordered_set<int32_t> timed;
  for (auto _ : state) {
    state.PauseTiming();
    const uint64_t begin = ticks;
    for (SpanLog* log : logs) {
      ticks = begin;
      for (int k = 0; k < kSpansPerLog; k++) {
        ContextSnapshot context{};
        context.trace_id_low = span_id;
        context.span_id = span_id++;
        context.attributes[0] = routes[k % 4];
        context.attributes[1] = routes[(k / 4) % 4];
        log->SetOpenBegin(kMonotonicFlag | ticks, 0);
        ticks += span_ticks;
        log->EndInterval(context, kMonotonicFlag | ticks);
      }
      log->SetOpenBegin(kMonotonicFlag | ticks, 0);
    }
    clock.Set(ticks);
    state.ResumeTiming();
    drain.Drain([writer](const SpanInterval& span) { writer->AddSpan(span); }, &timed,
                [writer](const SpanDrain::OpenInterval& open) {
                  writer->SetOpenSpan(open.tid, open.virtual_thread_id, open.begin_ticks,
                                      open.read_ticks, open.context);
                });
    writer->AddTimedThreads(timed);
    writer->SettleSpans(ticks - window_ticks);
    if (const Status ticked = writer->Tick(); !ticked.ok()) {
      state.SkipWithError(ticked.message().c_str());
      return;
    }
  }
  clock.Advance(span_ticks);
  if (const Status closed = writer->Close(); !closed.ok()) {
    state.SkipWithError(closed.message().c_str());
    return;
  }
  const double spans = static_cast<double>(state.iterations()) * threads * kSpansPerLog;
  struct stat st;
  stat(path.c_str(), &st);
  state.SetItemsProcessed(static_cast<int64_t>(spans));
  state.counters["bytes_per_span"] = static_cast<double>(st.st_size) / spans;
  state.counters["written"] = static_cast<double>(writer->spans_written()) / spans;
  unlink(path.c_str());
}

void BM_DrainSpans(benchmark::State& state) { DrainSpans(state, 1000000, 0); }
void BM_DrainSpansWindowed(benchmark::State& state) { DrainSpans(state, 20000, 50000000); }

// Arguments: threads with a span log; contexts=all (1) or triggered (0).
BENCHMARK(BM_DrainSpans)
    ->ArgNames({"threads", "all"})
    ->Args({16, 1})
    ->Args({200, 1})
    ->Args({16, 0})
    ->Args({200, 0})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DrainSpansWindowed)
    ->ArgNames({"threads", "all"})
    ->Args({16, 1})
    ->Args({16, 0})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ctxprof

BENCHMARK_MAIN();
