// SampleSink: where a session's background thread delivers drained samples: the Aggregator
// (in-memory counts, the collapsed-stack dump) and, with file= or repository=, the Recording
// (the JFR writer).
//
// Thread safety: Consume() is called by the session's one background thread only; an
// implementation that is also read by other threads (dump, tests) synchronises internally.
#ifndef CTXPROF_PROFILER_SESSION_SAMPLE_SINK_H_
#define CTXPROF_PROFILER_SESSION_SAMPLE_SINK_H_

#include "profiler/sampler/sample.h"

namespace ctxprof {

class SampleSink {
 public:
  virtual ~SampleSink() = default;
  // `record` is valid only during the call (its buffer slot is reused afterwards).
  virtual void Consume(const SampleRecord& record) = 0;
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SESSION_SAMPLE_SINK_H_
