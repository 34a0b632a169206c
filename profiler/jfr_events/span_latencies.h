// SpanLatencies: the latency histograms of every closed span, written as ctxprof.SpanLatency
// events, so that percentiles are right even when contexts=triggered writes only the spans
// something was recorded in.
//
// The JFR writer hands each interval the drain closed (JfrWriter::AddSpan, the same intervals
// SpanIntervals turns into ctxprof.Context events) to Add before anything cuts it, so a span that
// a chunk end or a flush writes in parts counts once, with its whole length. A span is what a
// trace and span id name: its intervals on one thread that follow each other without a gap (a
// tracer opens the span, then sets its attributes: three intervals) count as one, from the
// first's begin to the last's end, with the last's attribute values; it counts once the thread
// has gone on to another context (the next interval, or the open one SetOpen reports). Intervals
// without ids count one by one. A parent span counts per stretch between its children. Spans are
// grouped by their attribute values (trace and span id left out: one histogram per request would
// defeat it). At every segment end Write appends one event per group that had a span close since
// the last segment end, and starts over: histograms are per segment, and a reader adds them up
// (LatencyHistogram, profiler/base). A span the recording's end finds still open (DrainOpen) is
// not closed and is not counted.
//
// Memory: per attribute-value set that closed a span in the current segment, a count per bucket
// up to its longest span's (about 1,600 four-byte counts when that is a second).
//
// Thread safety: none; owned by the JFR writer's thread.
#ifndef CTXPROF_PROFILER_JFR_EVENTS_SPAN_LATENCIES_H_
#define CTXPROF_PROFILER_JFR_EVENTS_SPAN_LATENCIES_H_

#include <array>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "context/context_block.h"
#include "profiler/base/latency_histogram.h"
#include "profiler/jfr/jfr_chunk_writer.h"
#include "profiler/jfr_events/attribute_value_pool.h"
#include "profiler/jfr_events/event_encoder.h"
#include "profiler/jfr_events/flat_index.h"
#include "profiler/jfr_events/span_intervals.h"

namespace ctxprof {

class SpanLatencies {
 public:
  // `ticks_per_second`: the session clock's rate, to convert span lengths to nanoseconds.
  SpanLatencies(size_t attribute_count, uint64_t ticks_per_second)
      : attribute_count_(attribute_count), nanos_per_tick_(1e9 / ticks_per_second) {}

  // An interval the drain closed (`span.closed`); one still open at the end is not counted, nor
  // the span it continues.
  void Add(const SpanInterval& span);
  // The interval thread `tid` (its virtual thread, if not 0) had open at the drain: a span
  // held back by Add whose ids it does not carry is complete.
  void SetOpen(int32_t tid, uint64_t virtual_thread_id, const ContextSnapshot& open);
  // At the recording's end: counts the spans Add held back.
  void CountUnfinished();
  // Attribute names registered since: at a chunk start only, when Write has emptied the groups.
  void set_attribute_count(size_t count) { attribute_count_ = count; }
  // Appends this segment's events to `chunk`'s out() (their attribute values queued in
  // `values`), and forgets them.
  void Write(JfrChunkWriter* chunk, EventEncoder* encoder, AttributeValuePool* values,
             uint64_t* pending_bytes);

 private:
  using Attributes = std::array<uint32_t, kAttributeSlots>;
  // A segment's spans of one attribute-value set. Counted into an array by bucket index (up to
  // the largest seen), not LatencyHistogram's tree: every span of the workload passes here,
  // whether anything is recorded in it or not. Write makes the histogram.
  struct Group {
    Attributes attributes{};  // 0 past the event's slots
    std::vector<uint32_t> counts;
    int64_t sum = 0;
    int64_t max = 0;
    uint64_t first_end = UINT64_MAX;  // ticks of the first and last span end it holds
    uint64_t last_end = 0;
  };

  void Count(const SpanInterval& span);
  // Drops the span held for `key` (SpanOwnerKey), and held_ with it.
  void Forget(uint64_t key);

  size_t attribute_count_;
  const double nanos_per_tick_;
  // This segment's groups, found by their attribute values through groups_index_: one probe of a
  // flat table per span, where a node map hashed and chased a node.
  std::vector<Group> groups_;
  FlatIndex groups_index_{64};
  // Per thread (a virtual thread apart from its carriers), the span whose intervals may go on;
  // held_ is the entry of held_key_ (nodes stay put until erased): a drain brings a thread's
  // intervals together.
  std::unordered_map<uint64_t, SpanInterval> unfinished_;  // by SpanOwnerKey
  uint64_t held_key_ = 0;                                  // no SpanOwnerKey is 0
  SpanInterval* held_ = nullptr;
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_JFR_EVENTS_SPAN_LATENCIES_H_
