// Aggregator: counts samples per (kind, thread state, context, stack) in memory (CPU and wall
// samples only: runtime events such as allocations are left to the JFR recording), and renders
// them symbolized (native frames with the Symbolizer, Java frames with the runtime's resolver as
// "java.lang.String.indexOf"): as AggregatedStack values (for tests and tools) or as a collapsed-
// stack text file (docs/SAMPLER.md, "Dump format").
//
// Memory: bounded. An entry costs 80 B in a vector plus 16-32 B of index slots. With a trace id per
// request nearly every sample is an entry of its own, so without a bound a session that ran for
// hours would grow without end (2,000 samples/s on two busy CPUs at 1 ms: ~0.7 GB per hour). Past
// `AggregatorLimits::request_ids` entries, a sample whose key is new is counted without its trace
// and span ids (ContextDetail::kWithoutRequestIds, rendered "[trace=folded]"); past `contexts`
// entries, without any context (kNone, "[context=folded]"). Weights are never lost, only the detail
// of new keys; keys seen before the limit keep theirs. Past the second limit a new entry has no
// context, one per (kind, state, stack), so the total is bounded by the program's distinct stacks.
// The JFR recording is unaffected: it carries every sample's full context.
//
// Thread safety: all methods are thread-safe (one mutex). Consume() runs on the background
// thread; Stacks()/WriteCollapsed() run on API threads and hold the mutex while symbolizing, which
// only delays draining (the sample buffer absorbs it), never a signal handler.
#ifndef CTXPROF_PROFILER_SESSION_AGGREGATOR_H_
#define CTXPROF_PROFILER_SESSION_AGGREGATOR_H_

#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "context/dictionary.h"
#include "profiler/base/status.h"
#include "profiler/jfr_events/flat_index.h"
#include "profiler/jfr_events/frame_resolver.h"
#include "profiler/session/sample_sink.h"
#include "profiler/symbols/symbolizer.h"

namespace ctxprof {

// How much of a sample's context its aggregated entry kept (see "Memory" above).
enum class ContextDetail : uint8_t {
  kFull = 0,
  kWithoutRequestIds = 1,  // trace and span ids folded away; attributes kept
  kNone = 2,               // the whole context folded away
};

struct AggregatedStack {
  SampleKind kind;
  ThreadState state;
  ContextDetail detail;
  ContextSnapshot context;          // zeroed where `detail` folded it
  std::vector<std::string> frames;  // symbolized, frames[0] = leaf
  uint64_t samples;                 // records
  uint64_t weight;                  // intervals they stand for (sum of record weights)
};

// An aggregated stack before symbolization: its raw frames (bci of Java frames: the first
// sample's).
struct RawAggregatedStack {
  SampleKind kind;
  ThreadState state;
  ContextDetail detail;
  ContextSnapshot context;
  std::vector<RawFrame> frames;
  uint64_t samples;
  uint64_t weight;
};

struct AggregatorCounters {
  uint64_t samples = 0;
  uint64_t truncated = 0;
  uint64_t context_busy = 0;
  uint64_t context_torn = 0;
  uint64_t by_engine[4] = {0, 0, 0, 0};  // indexed by Engine
  uint64_t request_ids_folded = 0;       // samples counted without their trace and span ids
  uint64_t contexts_folded = 0;          // samples counted without any context
};

// Entry counts past which new keys lose context detail (see "Memory" above). The defaults keep
// full detail for ~65 s of two CPUs sampled at 1 ms (~11 min at 10 ms) and bound the entries
// with full or partial context to ~30 MiB.
struct AggregatorLimits {
  size_t request_ids = size_t{1} << 17;
  size_t contexts = size_t{1} << 18;
};

class Aggregator : public SampleSink {
 public:
  // `attribute_names[slot]` names a context slot in the output (the session's registration);
  // `dictionary` maps value ids to strings and must outlive the Aggregator (may be nullptr).
  // `java_frames` names Java frames (the JVM layer's resolver, used under the mutex); without it
  // they render as "[java 0x<jmethodID>]".
  Aggregator(std::vector<std::string> attribute_names, const Dictionary* dictionary,
             std::unique_ptr<FrameResolver> java_frames = nullptr, AggregatorLimits limits = {})
      : attribute_names_(std::move(attribute_names)),
        dictionary_(dictionary),
        limits_(limits),
        java_frames_(std::move(java_frames)) {}

  void Consume(const SampleRecord& record) override;

  // The attribute names the session registered when it started, slot by slot.
  const std::vector<std::string>& attribute_names() const { return attribute_names_; }

  std::vector<AggregatedStack> Stacks();
  // The same, unsymbolized (a copy: the aggregator goes on consuming).
  std::vector<RawAggregatedStack> RawStacks();
  AggregatorCounters counters();
  // Writes the collapsed-stack file; kIo naming the path and carrying the errno on failure.
  Status WriteCollapsed(const std::string& path);

 private:
  // An aggregation key: the sample's kind, state and context, and its stack as an index into
  // stacks_. Every byte is a field (no padding), so the key hashes and compares as bytes.
  struct Key {
    SampleKind kind;
    ThreadState state;
    ContextDetail detail;
    uint8_t zero;  // explicit padding, always 0
    uint32_t stack;
    ContextSnapshot context;
    bool operator==(const Key& other) const { return memcmp(this, &other, sizeof(Key)) == 0; }
  };
  struct Counts {
    uint64_t samples;
    uint64_t weight;
  };
  struct Entry {
    Key key;
    Counts counts;
  };
  // The counters of `key`'s entry, created if new; a new key past limits_ loses detail first.
  Counts& CountsLocked(Key key);
  // The entry of `key`, or nullptr.
  Counts* FindLocked(const Key& key);
  // The entry of `key`, created if new.
  Counts& FindOrAddLocked(const Key& key);
  // Interns the record's stack (frame ids and kinds; bci as first seen) into stacks_.
  uint32_t StackIdLocked(const SampleRecord& record);
  RawAggregatedStack EntryLocked(const Entry& entry) const;
  std::vector<std::string> SymbolizeLocked(const std::vector<RawFrame>& frames);
  std::string JavaFrameLocked(const RawFrame& frame);
  std::string ContextFramesLocked(ContextDetail detail, const ContextSnapshot& context);

  const std::vector<std::string> attribute_names_;
  const Dictionary* const dictionary_;
  const AggregatorLimits limits_;
  std::mutex mutex_;
  // Stacks are stored once however many contexts they are seen under: with a context per
  // request nearly every sample is an entry of its own, and it costs a key and two counters
  // rather than a copy of its frames (the background thread's CPU and memory per sample).
  std::vector<std::vector<RawFrame>> stacks_;   // guarded
  FlatIndex stack_index_;                       // guarded; positions in stacks_ (ids and kinds)
  std::vector<Entry> entries_;                  // guarded; in the order first seen
  FlatIndex entry_index_;                       // guarded; positions in entries_
  AggregatorCounters counters_;                 // guarded
  Symbolizer symbolizer_;                       // guarded
  std::unique_ptr<FrameResolver> java_frames_;  // guarded; may be null
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SESSION_AGGREGATOR_H_
