#include "profiler/jfr_events/span_intervals.h"

#include <algorithm>

#include "context/dictionary.h"

namespace ctxprof {

void SpanIntervals::Add(const SpanInterval& span) {
  if (span.end_ticks <= span.begin_ticks) return;  // converted to nothing: no record inside
  Thread& thread = threads_[span.tid];
  Pending pending{span};
  // Records remembered before this span was known: those before it are in no span.
  auto first_inside =
      std::lower_bound(thread.unjoined.begin(), thread.unjoined.end(), span.begin_ticks);
  auto after = std::lower_bound(first_inside, thread.unjoined.end(), span.end_ticks);
  pending.triggered = first_inside != after;
  thread.unjoined.erase(thread.unjoined.begin(), after);
  thread.last_end = std::max(thread.last_end, span.end_ticks);
  thread.spans.push_back(pending);
}

uint64_t SpanIntervals::Join(int32_t tid, uint64_t ticks, const ContextSnapshot& fallback) {
  Thread& thread = threads_[tid];
  // The last span beginning at or before `ticks`.
  auto after = std::upper_bound(
      thread.spans.begin(), thread.spans.end(), ticks,
      [](uint64_t t, const Pending& pending) { return t < pending.span.begin_ticks; });
  if (after != thread.spans.begin() && ticks < (after - 1)->span.end_ticks) {
    Pending& pending = *(after - 1);
    pending.triggered = true;
    return ids_->IdOf(pending.span.context, chunk_->chunk_number());
  }
  if (ticks < thread.last_end) return 0;  // between two known spans: no context
  thread.unjoined.insert(std::upper_bound(thread.unjoined.begin(), thread.unjoined.end(), ticks),
                         ticks);
  return fallback.empty() ? 0 : ids_->IdOf(fallback, chunk_->chunk_number());
}

void SpanIntervals::Forget(int32_t tid, uint64_t ticks) {
  auto found = threads_.find(tid);
  if (found == threads_.end()) return;
  std::vector<uint64_t>& unjoined = found->second.unjoined;
  unjoined.erase(unjoined.begin(), std::lower_bound(unjoined.begin(), unjoined.end(), ticks));
}

void SpanIntervals::Settle(uint64_t horizon, uint64_t* pending_bytes) {
  for (auto& [tid, thread] : threads_) {
    while (!thread.spans.empty() && thread.spans.front().span.end_ticks <= horizon) {
      Pending& front = thread.spans.front();
      if (!front.written && (front.triggered || write_all_)) Write(&front, pending_bytes);
      thread.spans.pop_front();
    }
  }
}

void SpanIntervals::WriteTriggered(uint64_t* pending_bytes) {
  for (auto& [tid, thread] : threads_) {
    for (Pending& pending : thread.spans) {
      if (pending.triggered && !pending.written) Write(&pending, pending_bytes);
    }
  }
}

void SpanIntervals::Write(Pending* pending, uint64_t* pending_bytes) {
  pending->written = true;
  const SpanInterval& span = pending->span;
  const uint32_t chunk = chunk_->chunk_number();
  for (size_t slot = 0; slot < attribute_count_; slot++) {
    const uint32_t id = span.context.attributes[slot];
    if (id != Dictionary::kUnsetId) values_->Mark(id, chunk, pending_bytes);
  }
  const uint64_t context_id = ids_->IdOf(span.context, chunk);
  chunk_->NoteEventTicks(span.end_ticks);
  encoder_->AppendContext(
      ContextEventFields{span.begin_ticks, span.end_ticks - span.begin_ticks, thread_key_(span.tid),
                         context_id, &span.context, attribute_count_},
      &chunk_->out());
  spans_written_++;
}

}  // namespace ctxprof
