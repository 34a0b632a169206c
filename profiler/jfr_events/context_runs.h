// ContextRuns: turns the contexts of a thread's consecutive samples and events into
// ctxprof.Context interval events, so a reader joins each of them to its context by thread and
// time.
//
// What a run covers: a sample is an instant; a runtime event with a duration (a lock wait) covers
// [its start, its end], and must be joinable by either (AgentTest joins by startTime; ours and
// JDK 25's `jfr print` attach contexts to an event at its end time). Records come
// in the order of their `ticks` (a wait's end).
//
// Per thread, a run of consecutive records with the same non-empty ContextSnapshot becomes one
// ctxprof.Context event. It starts at the earliest time the run covers (a wait that began before
// the run's first record pulls it back, but never before the end of the thread's previous
// interval if that one has another context; one with the same context, cut by a segment end,
// may overlap it)
// and ends at the smallest tick count that converts to a time strictly after the run's last
// record (the JDK's tick conversion, with one nanosecond of margin for per-chunk rounding), so
// [start, end) covers exactly the run's records and no other. A run also ends at every segment
// end (EndAll: each flush and chunk carries the contexts of its own records), and when a thread's
// records arrive out of tick order (then the intervals around that record may overlap: keep the
// records of one thread in tick order). Intervals are written only when some sample or event
// falls inside them. Each carries the contextId of its context (ContextIds), which Track also
// returns for the record.
//
// Thread safety: none; owned by the JFR writer's thread.
#ifndef CTXPROF_PROFILER_JFR_EVENTS_CONTEXT_RUNS_H_
#define CTXPROF_PROFILER_JFR_EVENTS_CONTEXT_RUNS_H_

#include <cstdint>
#include <unordered_map>

#include "context/context_block.h"
#include "profiler/jfr/jfr_chunk_writer.h"
#include "profiler/jfr_events/attribute_value_pool.h"
#include "profiler/jfr_events/context_ids.h"
#include "profiler/jfr_events/event_encoder.h"

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

  // Follows the context of a record of thread `tid` (pool key `thread_key`) that covers
  // [first_ticks, last_ticks] (a sample: first_ticks == last_ticks); a run it ends is written at
  // once. Adds the bytes of newly queued attribute values to *pending_bytes. Returns the
  // record's contextId (0 for an empty context).
  uint64_t Track(int32_t tid, uint32_t thread_key, uint64_t first_ticks, uint64_t last_ticks,
                 const ContextSnapshot& context, uint64_t* pending_bytes);
  // Writes every open run (at a flush or a chunk end).
  void EndAll();
  // Attribute names registered since: at a chunk start only (after EndAll).
  void set_attribute_count(size_t count) { attribute_count_ = count; }
  // Writes one interval of thread `thread_key` with `context` that covers just `ticks`, apart
  // from the runs: for a record written out of time order, a live object at the recording's
  // end with its allocation's time and context, so that the last chunk resolves its contextId
  // and a repository's last file alone joins it. The interval lies inside the one its
  // allocation was in (same thread, same context), so joins stay unambiguous. Returns the
  // contextId, 0 for an empty context (then nothing is written).
  uint64_t CoverInstant(uint32_t thread_key, uint64_t ticks, const ContextSnapshot& context,
                        uint64_t* pending_bytes);

 private:
  struct Run {
    bool open = false;
    ContextSnapshot context;
    uint64_t context_id = 0;
    uint32_t thread_key = 0;
    uint64_t first_ticks = 0;
    uint64_t last_ticks = 0;
    // The thread's last written interval: its end and context.
    uint64_t previous_end = 0;
    ContextSnapshot previous_context{};
  };

  // Writes `run`; its end stays <= next_ticks when that allows it.
  void End(Run* run, uint64_t next_ticks);
  // Queues the context's attribute values for the chunk.
  void MarkValues(const ContextSnapshot& context, uint64_t* pending_bytes);
  // Appends one ctxprof.Context event.
  void Write(uint64_t start_ticks, uint64_t duration_ticks, uint32_t thread_key,
             uint64_t context_id, const ContextSnapshot& context);
  uint64_t DurationTicks(uint64_t first_ticks, uint64_t last_ticks) const;

  JfrChunkWriter* const chunk_;
  EventEncoder* const encoder_;
  AttributeValuePool* const values_;
  ContextIds* const ids_;
  size_t attribute_count_;
  std::unordered_map<int32_t, Run> runs_;  // by kernel tid
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_JFR_EVENTS_CONTEXT_RUNS_H_
