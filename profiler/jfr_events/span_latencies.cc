#include "profiler/jfr_events/span_latencies.h"

#include <algorithm>
#include <cmath>

#include "context/dictionary.h"

namespace ctxprof {

void SpanLatencies::Add(const SpanInterval& span) {
  if (!span.closed || span.end_ticks < span.begin_ticks) return;
  Attributes attributes{};
  std::copy(span.context.attributes, span.context.attributes + kAttributeSlots, attributes.begin());
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
