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

void SpanLatencies::Forget(uint64_t key) {
  unfinished_.erase(key);
  if (key == held_key_) held_ = nullptr;
}

void SpanLatencies::Add(const SpanInterval& span) {
  if (span.end_ticks < span.begin_ticks) return;
  if (!HasIds(span.context)) {
    if (span.closed) Count(span);
    return;
  }
  const uint64_t key = SpanOwnerKey(span.tid, span.virtual_thread_id);
  // The thread's held span: the one of the last call, mostly (a drain brings a thread's
  // intervals together), else found or started with `span`.
  bool fresh = false;
  if (held_ == nullptr || key != held_key_) {
    // try_emplace: emplace would build (allocate) a node even when the thread has one.
    auto inserted = unfinished_.try_emplace(key, span);
    fresh = inserted.second;
    held_key_ = key;
    held_ = &inserted.first->second;
  }
  SpanInterval& held = *held_;
  const bool continues =
      !fresh && SameSpan(held.context, span.context) && held.end_ticks == span.begin_ticks;
  if (!span.closed) {  // open at the recording's end: so is the span it continues
    if (!fresh && !continues) Count(held);
    Forget(key);
    return;
  }
  if (fresh) return;
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
  const uint64_t key = SpanOwnerKey(tid, virtual_thread_id);
  auto held = unfinished_.find(key);
  if (held == unfinished_.end() || SameSpan(held->second.context, open)) return;
  Count(held->second);
  Forget(key);
}

void SpanLatencies::CountUnfinished() {
  for (const auto& [thread, span] : unfinished_) Count(span);
  unfinished_.clear();
  held_ = nullptr;
}

void SpanLatencies::Count(const SpanInterval& span) {
  // Only the slots the event has fields for: the others (attributes registered after the
  // recording started) would split groups that no reader can tell apart. Hashed and compared
  // over those slots only, two to a word, straight from the span (a copy first would stall the
  // loads on it).
  const uint32_t* values = span.context.attributes;
  uint64_t hash = attribute_count_;
  for (size_t slot = 0; slot < attribute_count_; slot += 2) {
    // The pair's second slot only if it is one of those: an odd count's last word has one.
    const uint64_t second = slot + 1 < attribute_count_ ? values[slot + 1] : 0;
    hash = (hash ^ (values[slot] | second << 32)) * 0x9E3779B97F4A7C15ULL;
  }
  const auto same = [this, values](uint32_t at) {
    const Attributes& other = groups_[at].attributes;
    for (size_t slot = 0; slot < attribute_count_; slot++) {
      if (other[slot] != values[slot]) return false;
    }
    return true;
  };
  bool inserted = false;
  const uint32_t position = groups_index_.FindOrInsert(
      MixBits(hash), static_cast<uint32_t>(groups_.size()), same, &inserted);
  if (inserted) {
    groups_.emplace_back();
    std::copy(values, values + attribute_count_, groups_.back().attributes.begin());
  }
  Group& group = groups_[position];
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
  std::vector<const Group*> sorted;
  sorted.reserve(groups_.size());
  for (const Group& group : groups_) sorted.push_back(&group);
  std::sort(sorted.begin(), sorted.end(),
            [](const Group* a, const Group* b) { return a->attributes < b->attributes; });
  for (const Group* entry : sorted) {
    const Attributes& attributes = entry->attributes;
    const Group& group = *entry;
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
  groups_index_.Clear();
}

}  // namespace ctxprof
