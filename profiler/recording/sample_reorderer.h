// SampleReorderer: gives the JFR writer each thread's samples in tick order.
//
// The writer turns runs of same-context samples (and runtime events) of a thread into
// ctxprof.Context intervals and needs those records in time order, but the sample buffer hands
// records over in slot order: a drain that wraps around the ring, or a handler interrupted by
// another signal's handler (cpu and wall together), publishes a later sample before an earlier one.
// The reorderer holds samples back and releases them sorted by ticks once they are older than a
// horizon the caller chooses (now minus a window longer than any handler can take to publish), so a
// late sample is still sorted into place. Samples with equal ticks keep their arrival order.
//
// Memory: a held sample keeps its header and only its frame_count frames.
// Thread safety: none; the recording's one consumer thread uses it.
#ifndef CTXPROF_PROFILER_RECORDING_SAMPLE_REORDERER_H_
#define CTXPROF_PROFILER_RECORDING_SAMPLE_REORDERER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "profiler/sampler/sample.h"

namespace ctxprof {

class SampleReorderer {
 public:
  SampleReorderer();

  void Add(const SampleRecord& record);
  // Calls `emit` for every held sample with ticks <= `horizon`, oldest first, and forgets them.
  // The record passed to `emit` is valid only during the call.
  void Release(uint64_t horizon, const std::function<void(const SampleRecord&)>& emit);
  size_t held() const { return held_.size(); }

 private:
  struct Held {
    uint64_t ticks;
    uint64_t arrival;
    int32_t tid;
    SampleKind kind;
    Engine engine;
    uint8_t flags;
    ThreadState state;
    uint32_t weight;
    uint64_t virtual_thread_id;
    ContextSnapshot context;
    EventFields event;
    uint32_t frame_count;
    size_t first_frame;  // index into frames_
  };

  std::vector<Held> held_;
  std::vector<RawFrame> frames_;
  uint64_t arrivals_ = 0;
  std::unique_ptr<SampleRecord> scratch_;  // ~32 KiB: on the heap, reused for every release
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_RECORDING_SAMPLE_REORDERER_H_
