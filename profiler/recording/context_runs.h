// ContextRuns: turns the contexts of a thread's consecutive samples into ctxprof.Context
// interval events, so a reader joins each sample to its context by thread and time.
//
// Per thread, a run of consecutive samples with the same non-empty ContextSnapshot becomes one
// ctxprof.Context event. It starts at the run's first sample and ends at the smallest tick count
// that converts to a time strictly after the run's last sample (the JDK's tick conversion, with
// one nanosecond of margin for per-chunk rounding), so [start, end) covers exactly the run's
// samples and no other. A run also ends at every segment end (EndAll: each flush and chunk carries
// the contexts of its own samples), and when a thread's samples arrive out of tick order (then the
// intervals around that sample may overlap: keep samples of one thread in tick order). Intervals
// are written only when some sample falls inside them. Each carries the contextId of its context
// (ContextIds), which Track also returns for the sample.
//
// Thread safety: none; owned by the JFR writer's thread.
#ifndef CTXPROF_PROFILER_RECORDING_CONTEXT_RUNS_H_
#define CTXPROF_PROFILER_RECORDING_CONTEXT_RUNS_H_

#include <cstdint>
#include <unordered_map>

#include "context/context_block.h"
#include "profiler/jfr/jfr_chunk_writer.h"
#include "profiler/recording/attribute_value_pool.h"
#include "profiler/recording/context_ids.h"
#include "profiler/recording/event_encoder.h"

namespace ctxprof {

class ContextRuns {
 public:
  // Events go to `chunk`'s out(), their attribute values into `values`, their ids come from
  // `ids`; every pointer must outlive this object. `attribute_count` is the number of registered
  // attribute slots.
  ContextRuns(JfrChunkWriter* chunk, EventEncoder* encoder, AttributeValuePool* values,
              ContextIds* ids, size_t attribute_count)
      : chunk_(chunk),
        encoder_(encoder),
        values_(values),
        ids_(ids),
        attribute_count_(attribute_count) {}

  // Follows the context of a sample of thread `tid` (pool key `thread_key`) at `ticks`; a run it
  // ends is written at once. Adds the bytes of newly queued attribute values to *pending_bytes.
  // Returns the sample's contextId (0 for an empty context).
  uint64_t Track(int32_t tid, uint32_t thread_key, uint64_t ticks, const ContextSnapshot& context,
                 uint64_t* pending_bytes);
  // Writes every open run (at a flush or a chunk end).
  void EndAll();

 private:
  struct Run {
    bool open = false;
    ContextSnapshot context;
    uint64_t context_id = 0;
    uint32_t thread_key = 0;
    uint64_t first_ticks = 0;
    uint64_t last_ticks = 0;
  };

  // Writes `run`; its end stays <= next_ticks when that allows it.
  void End(Run* run, uint64_t next_ticks);
  uint64_t DurationTicks(uint64_t first_ticks, uint64_t last_ticks) const;

  JfrChunkWriter* const chunk_;
  EventEncoder* const encoder_;
  AttributeValuePool* const values_;
  ContextIds* const ids_;
  const size_t attribute_count_;
  std::unordered_map<int32_t, Run> runs_;  // by kernel tid
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_RECORDING_CONTEXT_RUNS_H_
