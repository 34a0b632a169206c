#include "profiler/jfr_events/span_latencies.h"

#include <algorithm>
#include <cmath>

#include "context/dictionary.h"

namespace ctxprof {

namespace {

bool HasIds(const ContextSnapshot& context) {
  return context.span_id != 0 || context.trace_id_high != 0 || context.trace_id_low != 0;
}

bool SameSpan(const ContextSnapshot& a, const ContextSnapshot& b) {
  return a.span_id == b.span_id && a.trace_id_high == b.trace_id_high &&
         a.trace_id_low == b.trace_id_low;
}

}  // namespace

void SpanLatencies::Add(const SpanInterval& span) {
  if (span.end_ticks < span.begin_ticks) return;
  if (!HasIds(span.context)) {
    if (span.closed) Count(span);
    return;
  }
  auto inserted = unfinished_.emplace(SpanOwnerKey(span.tid, span.virtual_thread_id), span);
  SpanInterval& held = inserted.first->second;
  const bool continues = !inserted.second && SameSpan(held.context, span.context) &&
                         held.end_ticks == span.begin_ticks;
  if (!span.closed) {  // open at the recording's end: so is the span it continues
    if (inserted.second || continues) {
      unfinished_.erase(inserted.first);
    } else {
      Count(held);
      unfinished_.erase(inserted.first);
    }
    return;
  }
  if (inserted.second) return;
  if (continues) {
    held.end_ticks = span.end_ticks;
    std::copy(span.context.attributes, span.context.attributes + kAttributeSlots,
              held.context.attributes);
    return;
  }
  Count(held);
  held = span;
}

void SpanLatencies::SetOpen(int32_t tid, uint64_t virtual_thread_id, const ContextSnapshot& open) {
  auto held = unfinished_.find(SpanOwnerKey(tid, virtual_thread_id));
  if (held == unfinished_.end() || SameSpan(held->second.context, open)) return;
  Count(held->second);
  unfinished_.erase(held);
}

void SpanLatencies::CountUnfinished() {
  for (const auto& [thread, span] : unfinished_) Count(span);
  unfinished_.clear();
}

void SpanLatencies::Count(const SpanInterval& span) {
  // Only the slots the event has fields for: the others (attributes registered after the
  // recording started) would split groups that no reader can tell apart.
  Attributes attributes{};
  std::copy(span.context.attributes, span.context.attributes + attribute_count_,
            attributes.begin());
  Group& group = groups_[attributes];
  group.histogram.Add(static_cast<int64_t>(static_cast<double>(span.end_ticks - span.begin_ticks) *
                                           nanos_per_tick_));
  group.first_end = std::min(group.first_end, span.end_ticks);
  group.last_end = std::max(group.last_end, span.end_ticks);
}

void SpanLatencies::Write(JfrChunkWriter* chunk, EventEncoder* encoder, AttributeValuePool* values,
                          uint64_t* pending_bytes) {
  for (const auto& [attributes, group] : groups_) {
    for (size_t slot = 0; slot < attribute_count_; slot++) {
      if (attributes[slot] != Dictionary::kUnsetId) {
        values->Mark(attributes[slot], chunk->chunk_number(), pending_bytes);
      }
    }
    chunk->NoteEventTicks(group.last_end);
    encoder->AppendSpanLatency(
        SpanLatencyFields{group.first_end, group.last_end - group.first_end, &group.histogram,
                          attributes.data(), attribute_count_},
        &chunk->out());
  }
  groups_.clear();
}

}  // namespace ctxprof
