// Aggregator: counts samples per (kind, thread state, context, native stack) in memory, and
// renders them symbolized: as AggregatedStack values (for tests and tools) or as a collapsed-
// stack text file (docs/SAMPLER.md, "Dump format").
//
// Thread safety: all methods are thread-safe (one mutex). Consume() runs on the background
// thread; Stacks()/WriteCollapsed() run on API threads and hold the mutex while symbolizing, which
// only delays draining (the sample buffer absorbs it), never a signal handler.
#ifndef CTXPROF_PROFILER_AGGREGATOR_H_
#define CTXPROF_PROFILER_AGGREGATOR_H_

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "context/dictionary.h"
#include "profiler/sample_sink.h"
#include "profiler/symbolizer.h"

namespace ctxprof {

struct AggregatedStack {
  SampleKind kind;
  ThreadState state;
  ContextSnapshot context;
  std::vector<std::string> frames;  // symbolized, frames[0] = leaf
  uint64_t samples;                 // records
  uint64_t weight;                  // intervals they stand for (sum of record weights)
};

struct AggregatorCounters {
  uint64_t samples = 0;
  uint64_t truncated = 0;
  uint64_t context_busy = 0;
  uint64_t context_torn = 0;
  uint64_t by_engine[4] = {0, 0, 0, 0};  // indexed by Engine
};

class Aggregator : public SampleSink {
 public:
  // `attribute_names[slot]` names a context slot in the output (the session's registration);
  // `dictionary` maps value ids to strings and must outlive the Aggregator (may be nullptr).
  Aggregator(std::vector<std::string> attribute_names, const Dictionary* dictionary)
      : attribute_names_(std::move(attribute_names)), dictionary_(dictionary) {}

  void Consume(const SampleRecord& record) override;

  std::vector<AggregatedStack> Stacks();
  AggregatorCounters counters();
  // Writes the collapsed-stack file; false and *error (naming the path) on an I/O failure.
  bool WriteCollapsed(const std::string& path, std::string* error);

 private:
  struct Entry {
    SampleKind kind;
    ThreadState state;
    ContextSnapshot context;
    std::vector<uint64_t> pcs;
    uint64_t samples;
    uint64_t weight;
  };
  std::vector<std::string> SymbolizeLocked(const Entry& entry);
  std::string ContextFramesLocked(const ContextSnapshot& context);

  const std::vector<std::string> attribute_names_;
  const Dictionary* const dictionary_;
  std::mutex mutex_;
  std::unordered_map<std::string, Entry> entries_;  // guarded; key = the entry's bytes
  AggregatorCounters counters_;                     // guarded
  Symbolizer symbolizer_;                           // guarded
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_AGGREGATOR_H_
