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
  // try_emplace: emplace would build (allocate) a node even when the thread has one.
  auto inserted = unfinished_.try_emplace(SpanOwnerKey(span.tid, span.virtual_thread_id), span);
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

size_t SpanLatencies::AttributesHash::operator()(const Attributes& attributes) const {
  uint64_t hash = 0;
  for (uint32_t id : attributes) hash = (hash ^ id) * 0x9E3779B97F4A7C15ULL;
  return static_cast<size_t>(hash ^ (hash >> 29));
}

void SpanLatencies::Count(const SpanInterval& span) {
  // Only the slots the event has fields for: the others (attributes registered after the
  // recording started) would split groups that no reader can tell apart.
  Attributes attributes{};
  std::copy(span.context.attributes, span.context.attributes + attribute_count_,
            attributes.begin());
  Recent& recent = recent_[AttributesHash()(attributes) % recent_.size()];
  if (recent.group == nullptr || recent.attributes != attributes) {
    recent.group = &groups_[attributes];
    recent.attributes = attributes;
  }
  Group& group = *recent.group;
  const int64_t nanos = std::max<int64_t>(
      0, static_cast<int64_t>(static_cast<double>(span.end_ticks - span.begin_ticks) *
                              nanos_per_tick_));
  const size_t index =
      static_cast<size_t>(LatencyHistogram::IndexOf(LatencyHistogram::FloorOf(nanos)));
  if (index >= group.counts.size()) group.counts.resize(index + 1);
  group.counts[index]++;
  group.sum += nanos;
  group.max = std::max(group.max, nanos);
  group.first_end = std::min(group.first_end, span.end_ticks);
  group.last_end = std::max(group.last_end, span.end_ticks);
}

void SpanLatencies::Write(JfrChunkWriter* chunk, EventEncoder* encoder, AttributeValuePool* values,
                          uint64_t* pending_bytes) {
  // By attribute values, so that a segment's events come in the same order every run.
  std::vector<const std::pair<const Attributes, Group>*> sorted;
  sorted.reserve(groups_.size());
  for (const auto& entry : groups_) sorted.push_back(&entry);
  std::sort(sorted.begin(), sorted.end(),
            [](const auto* a, const auto* b) { return a->first < b->first; });
  for (const auto* entry : sorted) {
    const Attributes& attributes = entry->first;
    const Group& group = entry->second;
    LatencyHistogram histogram;
    for (size_t index = 0; index < group.counts.size(); index++) {
      if (group.counts[index] != 0) {
        histogram.AddBucket(LatencyHistogram::FloorOfIndex(static_cast<int>(index)),
                            group.counts[index], 0, 0);
      }
    }
    histogram.AddBucket(0, 0, group.sum, group.max);
    for (size_t slot = 0; slot < attribute_count_; slot++) {
      if (attributes[slot] != Dictionary::kUnsetId) {
        values->Mark(attributes[slot], chunk->chunk_number(), pending_bytes);
      }
    }
    chunk->NoteEventTicks(group.last_end);
    encoder->AppendSpanLatency(SpanLatencyFields{group.first_end, group.last_end - group.first_end,
                                                 &histogram, attributes.data(), attribute_count_},
                               &chunk->out());
  }
  groups_.clear();
  recent_ = {};
}

}  // namespace ctxprof
