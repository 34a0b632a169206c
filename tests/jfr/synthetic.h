// Deterministic synthetic inputs for JFR writer tests: a fake clock, fake resolvers and a
// workload of samples (many threads, deep stacks, contexts with non-ASCII and maximum-length
// values) together with what a reader must find for each sample.
#ifndef CTXPROF_TESTS_JFR_SYNTHETIC_H_
#define CTXPROF_TESTS_JFR_SYNTHETIC_H_

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "context/attribute_registry.h"
#include "context/dictionary.h"
#include "profiler/jfr/jfr_reader.h"
#include "profiler/jfr_events/frame_resolver.h"
#include "profiler/jfr_events/jfr_writer.h"
#include "profiler/sampler/clock.h"
#include "profiler/sampler/sample.h"

namespace ctxprof {

// A clock whose Now() is set by the test. Default: a 2.4 GHz "TSC" so tests prove that ticks
// are converted, not taken as nanoseconds.
class FakeClock : public Clock {
 public:
  explicit FakeClock(uint64_t ticks_per_second = 2400000000ULL,
                     uint64_t anchor_ticks = 1000000000000ULL,
                     int64_t anchor_epoch_nanos = 1795300000000000000LL)
      : ticks_per_second_(ticks_per_second),
        anchor_ticks_(anchor_ticks),
        anchor_epoch_nanos_(anchor_epoch_nanos),
        now_(anchor_ticks) {}
  uint64_t Now() const override { return now_; }
  uint64_t TicksPerSecond() const override { return ticks_per_second_; }
  const char* Name() const override { return "fake-tsc"; }
  uint64_t AnchorTicks() const override { return anchor_ticks_; }
  int64_t AnchorEpochNanos() const override { return anchor_epoch_nanos_; }
  void Set(uint64_t ticks) { now_ = ticks; }
  void Advance(uint64_t ticks) { now_ += ticks; }

 private:
  const uint64_t ticks_per_second_;
  const uint64_t anchor_ticks_;
  const int64_t anchor_epoch_nanos_;
  uint64_t now_;
};

// Java frames: id = method number; native frames: id = 0x7f0000000000 + function number * 16,
// named libfake.so.native_function_<n>, or from function kFirstCppFunction on the symbols of
// kCppSymbols as NativeFrameResolver writes them (profiler/jfr/native_method.h).
class FakeFrameResolver : public FrameResolver {
 public:
  static constexpr uint64_t kFirstCppFunction = 100;
  static constexpr std::array<const char*, 6> kCppSymbols = {
      "PhaseChaitin::gather_lrg_masks(bool)",
      "Symbol::as_C_string() const",
      "std::vector<int, std::allocator<int> >::push_back(int const&)",
      "outer(void (*)(int)) [clone .isra.0]",
      "(anonymous namespace)::helper(char const*)",
      "read",
  };

  void Resolve(const RawFrame& frame, ResolvedFrame* out) override;
  // "class.method" as `jfr` shows it, for the expectation of `frame`.
  static std::string DisplayName(const RawFrame& frame);
  static int32_t LineOf(const RawFrame& frame);
};

class FakeThreadResolver : public ThreadResolver {
 public:
  void Resolve(int32_t tid, ResolvedThread* out) override;
  static std::string NameOf(int32_t tid);
  static int64_t JavaIdOf(int32_t tid);  // odd tids are Java threads
};

// One sample (or runtime event) plus its expectation, kept in a compact form.
struct ExpectedSample {
  SampleKind kind;
  int32_t tid;
  uint64_t ticks;
  uint32_t stack;       // index into Workload::stacks
  int context;          // index into Workload::contexts, -1 = none
  EventFields event{};  // runtime events: class_id is an id in Workload::class_names
};

struct Workload {
  std::unique_ptr<Dictionary> dictionary;
  // Behind a pointer: a registry is neither copyable nor movable (it owns a mutex).
  std::unique_ptr<AttributeRegistry> attributes = std::make_unique<AttributeRegistry>();
  std::vector<std::vector<RawFrame>> stacks;
  std::vector<bool> stack_truncated;
  std::vector<ContextSnapshot> contexts;
  std::vector<ExpectedSample> samples;  // in the order given to the writer
  // Class names of runtime events (null when the workload has none).
  std::unique_ptr<Dictionary> class_names;

  // Builds the sample for samples[i] into `out`.
  void Fill(size_t i, SampleRecord* out) const;
  // Writes a JSON description of the expectation (see jfr_tool_check.py).
  std::string ExpectationJson() const;
  // Context field values ("traceId", "spanId" as W3C hex, attribute field names) of
  // contexts[index], the set ones only.
  std::map<std::string, std::string> ContextFields(int index) const;
  // The same of a ctxprof.Context event that JfrReader read.
  std::map<std::string, std::string> FieldsOf(const JfrEvent& context) const;
  // Writer inputs with this workload's dictionary and attributes and the given clock and
  // resolvers (the optional callbacks left empty).
  JfrWriterInputs Inputs(const Clock* clock, FrameResolver* frames, ThreadResolver* threads) const;
};

// `threads` threads x `samples_per_thread` samples, interleaved across threads, ticks starting
// at `first_ticks` and `spacing_ticks` apart. Deterministic for a given seed.
// A path named `name` under $TEST_TMPDIR (else /tmp) with nothing there yet (removed if it was).
std::string FreshPath(const std::string& name);
// The entries of `folder` (full paths, no dot files), sorted; empty if it cannot be read.
std::vector<std::string> ListFolder(const std::string& folder);

// Where the writer cuts a span after a record at `ticks`: the first tick that the JDK's
// conversion (JfrReader::EpochNanosOf) puts at least 2 ns after it (TicksJustAfter).
int64_t CutAfter(const JfrReader& reader, int64_t ticks);
// Every ctxprof.Context of `reader` as [start, end) ticks, sorted.
std::vector<std::pair<int64_t, int64_t>> ContextIntervals(const JfrReader& reader);

Workload MakeWorkload(int threads, int samples_per_thread, uint64_t first_ticks,
                      uint64_t spacing_ticks, uint32_t seed);
// The workload of the hand-placed span tests: `attributes` registered, one one-frame Java
// stack; contexts and samples are the test's.
Workload OneStackWorkload(const std::vector<std::string>& attributes);

// The hand-placed span tests' scene: a fake clock, t0 one millisecond after its start, one
// context (span `span_id`, the first of `attributes` = `endpoint`) of a one-stack workload whose
// samples the test sets before Open, and a writer (engine perf_cpu_clock) with thread kTid timed.
struct SpanScene {
  static constexpr int32_t kTid = 7;

  SpanScene(uint64_t span_id, const std::string& endpoint,
            const std::vector<std::string>& attributes = {"endpoint"});
  // A CPU sample of kTid at `ticks` in the scene's context.
  ExpectedSample CpuAt(uint64_t ticks) const;
  // Adds a context of span `span_id` whose first attribute is `endpoint`; returns its index.
  int AddContext(uint64_t span_id, const std::string& endpoint);
  // CpuAt(ticks) in workload.contexts[context_index].
  ExpectedSample CpuIn(uint64_t ticks, int context_index) const;
  // Opens `writer` on `path`; `context_id` as JfrWriterConfig's.
  Status Open(const std::string& path, bool context_id);
  // Adds workload.samples[i] with the clock at its ticks.
  Status AddSample(size_t i);
  // Settles every span, then closes with the clock at `end_ticks`.
  Status Close(uint64_t end_ticks);
  // The intervals (as ContextIntervals lists them) of the span open from t0 to `end_ticks`, cut
  // just after the record at `record_ticks`.
  std::vector<std::pair<int64_t, int64_t>> CutParts(const JfrReader& reader, uint64_t record_ticks,
                                                    uint64_t end_ticks) const;

  FakeClock clock;
  FakeFrameResolver frames;
  FakeThreadResolver threads;
  const uint64_t ms;
  const uint64_t t0;
  Workload workload;
  ContextSnapshot context{};
  JfrWriterConfig config;
  std::unique_ptr<JfrWriter> writer;
};

// Writes every sample of `workload` in order with a JfrWriter (fake resolvers, `clock` set to
// each sample's ticks, then one `spacing_ticks` past the last before Close). `config` gives the
// output; `inputs` fields other than dropped_samples are filled here.
Status WriteWorkload(const Workload& workload, FakeClock* clock, uint64_t spacing_ticks,
                     const JfrWriterConfig& config, std::function<uint64_t()> dropped_samples,
                     std::function<uint64_t()> dropped_spans = {});

}  // namespace ctxprof

#endif  // CTXPROF_TESTS_JFR_SYNTHETIC_H_
