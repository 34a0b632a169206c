#include "profiler/jfr_events/span_intervals.h"

#include <algorithm>

#include "context/dictionary.h"

namespace ctxprof {

void SpanIntervals::SpanRing::PushBack(const Pending& pending) {
  if (size_ == slots_.size()) {
    std::vector<Pending> slots(std::max<size_t>(16, 2 * slots_.size()));
    for (size_t index = 0; index < size_; index++) slots[index] = (*this)[index];
    slots_.swap(slots);
    head_ = 0;
  }
  (*this)[size_++] = pending;
}

void SpanIntervals::SpanRing::Insert(size_t index, const Pending& pending) {
  PushBack(pending);
  for (size_t at = size_ - 1; at > index; at--) (*this)[at] = (*this)[at - 1];
  (*this)[index] = pending;
}

void SpanIntervals::SpanRing::DropFront(size_t count) {
  if (count == 0) return;
  head_ = (head_ + count) & (slots_.size() - 1);
  size_ -= count;
}

size_t SpanIntervals::SpanRing::FirstBeginningAfter(size_t from, size_t to, uint64_t ticks) {
  while (from < to) {
    const size_t middle = from + (to - from) / 2;
    if ((*this)[middle].begin_ticks <= ticks) {
      from = middle + 1;
    } else {
      to = middle;
    }
  }
  return from;
}

SpanIntervals::Thread& SpanIntervals::ThreadOf(uint64_t owner) {
  if (last_thread_ == nullptr || last_owner_ != owner) {
    last_thread_ = &threads_[owner];
    last_owner_ = owner;
  }
  return *last_thread_;
}

void SpanIntervals::Add(const SpanInterval& span) {
  // The loss is on the log's thread's time, whoever ran in the spans around it.
  if (span.lost_since != 0 && span.lost_since < span.begin_ticks) {
    AddLoss(&ThreadOf(SpanOwnerKey(span.tid, 0)), span.lost_since, span.begin_ticks);
  }
  Thread& thread = ThreadOf(SpanOwnerKey(span.tid, span.virtual_thread_id));
  Pending pending;
  pending.end_ticks = span.end_ticks;
  pending.context = span.context;
  // Its start was written at a segment end already (CutOpen): the rest follows once settled,
  // triggered or not, so that its parts add up to its length.
  pending.begin_ticks = std::max(span.begin_ticks, thread.written_until);
  pending.cut = pending.begin_ticks > span.begin_ticks;
  if (span.end_ticks <= pending.begin_ticks) {  // nothing of it left to write
    thread.unjoined.erase(
        thread.unjoined.begin(),
        std::lower_bound(thread.unjoined.begin(), thread.unjoined.end(), span.end_ticks));
    thread.last_end = std::max(thread.last_end, span.end_ticks);
    return;
  }
  // Records remembered before this span was known: those before it are in no span.
  auto first_inside =
      std::lower_bound(thread.unjoined.begin(), thread.unjoined.end(), span.begin_ticks);
  auto after = std::lower_bound(first_inside, thread.unjoined.end(), span.end_ticks);
  pending.triggered = first_inside != after;
  // A cut at a chunk end goes just after the last record inside (WriteTriggered).
  if (pending.triggered) pending.last_record = *(after - 1);
  // Records that guessed this span's context are covered when it is written. A platform
  // thread's spans come in order, so a guess before this span is in a gap no later span covers
  // (the converted span clock can put a record just outside its span): it gets its own interval
  // there now, rather than one a chunk end would place after every span (WriteGuessed).
  const bool in_order = (SpanOwnerKey(span.tid, span.virtual_thread_id) >> 63) != 0;
  thread.guessed.erase(
      std::remove_if(
          thread.guessed.begin(), thread.guessed.end(),
          [&](const Guess& guess) {
            if (in_order && guess.ticks < span.begin_ticks) {
              AddLost(&thread, LostRecord{guess.ticks, span.begin_ticks, guess.context, guess.id});
              return true;
            }
            return guess.ticks >= span.begin_ticks && guess.ticks < span.end_ticks;
          }),
      thread.guessed.end());
  thread.unjoined.erase(thread.unjoined.begin(), after);
  thread.last_end = std::max(thread.last_end, span.end_ticks);
  // In order but for a virtual thread's, which its carriers' logs may give out of order.
  size_t position = thread.spans.size();
  while (position != thread.first_pending &&
         thread.spans[position - 1].begin_ticks > pending.begin_ticks) {
    --position;
  }
  if (position == thread.spans.size()) {
    thread.spans.PushBack(pending);
  } else {
    thread.spans.Insert(position, pending);
  }
}

uint64_t SpanIntervals::Join(int32_t tid, uint64_t virtual_thread_id, uint64_t ticks,
                             const ContextSnapshot& fallback, uint64_t* pending_bytes) {
  Thread& thread = ThreadOf(SpanOwnerKey(tid, virtual_thread_id));
  // The last span beginning at or before `ticks`.
  const size_t after =
      thread.spans.FirstBeginningAfter(thread.first_pending, thread.spans.size(), ticks);
  if (after != thread.first_pending && ticks < thread.spans[after - 1].end_ticks) {
    Pending& pending = thread.spans[after - 1];
    // Written whole at a flush of an earlier chunk: this chunk has no Context event for it, and
    // writing it again would overlap.
    if (pending.written && pending.written_chunk != chunk_->chunk_number()) return 0;
    pending.triggered = true;
    pending.last_record = std::max(pending.last_record, ticks);
    return ids_->IdOf(pending.context, chunk_->chunk_number(), &pending.id);
  }
  // Late: its span was settled before it came.
  if (ticks < settled_ && thread.first_pending != 0 &&
      ticks < thread.spans[thread.first_pending - 1].end_ticks) {
    const uint64_t id =
        JoinSettled(SpanOwnerKey(tid, virtual_thread_id), &thread, ticks, pending_bytes);
    return id != 0
               ? id
               : JoinLost(&thread, CarrierLosses(tid, virtual_thread_id, thread), ticks, fallback);
  }
  // Before the part written at a segment end: in an interval written there (a wait joined by its
  // start), no context, as the chunk may not carry that part's; outside them, a record late in
  // a stretch the log lost keeps its own context, in an interval that ends before the next part.
  if (ticks < thread.written_until) {
    uint64_t next_part = UINT64_MAX;
    for (const WrittenPart& part : thread.written_parts) {
      if (ticks >= part.begin_ticks && ticks < part.end_ticks) return 0;
      if (part.begin_ticks > ticks) next_part = std::min(next_part, part.begin_ticks);
    }
    return JoinLost(&thread, CarrierLosses(tid, virtual_thread_id, thread), ticks, fallback,
                    next_part);
  }
  // Between two known spans: in none, unless the log lost the spans there.
  if (ticks < thread.last_end) {
    return JoinLost(&thread, CarrierLosses(tid, virtual_thread_id, thread), ticks, fallback);
  }
  thread.unjoined.insert(std::upper_bound(thread.unjoined.begin(), thread.unjoined.end(), ticks),
                         ticks);
  // Inside the open interval as the drain read it: that is its span, which CutOpen writes.
  const bool in_open =
      !thread.open_context.empty() && ticks >= thread.open_begin && ticks < thread.open_read;
  if (in_open) return ids_->IdOf(thread.open_context, chunk_->chunk_number(), &thread.open_id);
  if (fallback.empty()) return 0;
  Guess guess{ticks, fallback};
  const uint64_t id = ids_->IdOf(fallback, chunk_->chunk_number(), &guess.id);
  thread.guessed.insert(
      std::upper_bound(thread.guessed.begin(), thread.guessed.end(), ticks,
                       [](uint64_t t, const Guess& other) { return t < other.ticks; }),
      guess);
  return id;
}

uint64_t SpanIntervals::JoinSettled(uint64_t owner, Thread* thread, uint64_t ticks,
                                    uint64_t* pending_bytes) {
  const size_t settled_begin =
      thread->first_pending - std::min(thread->first_pending, kLateJoinSpans);
  const size_t after =
      thread->spans.FirstBeginningAfter(settled_begin, thread->first_pending, ticks);
  if (after == settled_begin || ticks >= thread->spans[after - 1].end_ticks) return 0;
  Pending& pending = thread->spans[after - 1];
  // Written whole in an earlier chunk: this chunk has no Context event for it, and writing it
  // again would overlap.
  if (pending.written && pending.written_chunk != chunk_->chunk_number()) return 0;
  // Settled, it is closed and no other part of it is pending: write it whole now.
  if (!pending.written) Write(owner, &pending, pending_bytes);
  return ids_->IdOf(pending.context, chunk_->chunk_number(), &pending.id);
}

void SpanIntervals::AddLoss(Thread* thread, uint64_t begin_ticks, uint64_t end_ticks) {
  any_loss_ = true;
  KeepLast(&thread->losses, Loss{begin_ticks, end_ticks});  // drains bring them in order
  // Records joined before the loss was known: a guess keeps the context it took, a record in
  // the open interval as last read took that one's.
  thread->guessed.erase(
      std::remove_if(thread->guessed.begin(), thread->guessed.end(),
                     [&](const Guess& guess) {
                       if (guess.ticks < begin_ticks || guess.ticks >= end_ticks) {
                         return false;
                       }
                       AddLost(thread, LostRecord{guess.ticks, end_ticks, guess.context, guess.id});
                       return true;
                     }),
      thread->guessed.end());
  const auto first =
      std::lower_bound(thread->unjoined.begin(), thread->unjoined.end(), begin_ticks);
  const auto after = std::lower_bound(first, thread->unjoined.end(), end_ticks);
  if (!thread->open_context.empty()) {
    for (auto it = first; it != after; ++it) {
      if (*it >= thread->open_begin && *it < thread->open_read) {
        AddLost(thread, LostRecord{*it, end_ticks, thread->open_context, thread->open_id});
      }
    }
  }
  thread->unjoined.erase(first, after);
}

void SpanIntervals::AddLost(Thread* thread, const LostRecord& record) {
  // Mostly the latest: records come in time order, and a loss is known after what it holds.
  thread->lost.insert(
      std::upper_bound(thread->lost.begin(), thread->lost.end(), record.ticks,
                       [](uint64_t ticks, const LostRecord& other) { return ticks < other.ticks; }),
      record);
}

const std::vector<SpanIntervals::Loss>& SpanIntervals::CarrierLosses(int32_t tid,
                                                                     uint64_t virtual_thread_id,
                                                                     const Thread& thread) {
  static const std::vector<Loss> kNone;
  if (virtual_thread_id == 0) return thread.losses;
  if (!any_loss_) return kNone;
  const auto carrier = threads_.find(SpanOwnerKey(tid, 0));
  return carrier != threads_.end() ? carrier->second.losses : kNone;
}

uint64_t SpanIntervals::JoinLost(Thread* thread, const std::vector<Loss>& losses, uint64_t ticks,
                                 const ContextSnapshot& context, uint64_t limit) {
  if (context.empty() || ticks < thread->lost_written_until) return 0;
  for (auto loss = losses.rbegin(); loss != losses.rend(); ++loss) {
    if (ticks >= loss->end_ticks) return 0;
    if (ticks < loss->begin_ticks) continue;
    LostRecord record{ticks, std::min(loss->end_ticks, limit), context};
    const uint64_t id = ids_->IdOf(context, chunk_->chunk_number(), &record.id);
    AddLost(thread, record);
    return id;
  }
  return 0;
}

void SpanIntervals::WriteLost(uint64_t owner, Thread* thread, uint64_t up_to,
                              uint64_t* pending_bytes) {
  std::vector<LostRecord>& lost = thread->lost;
  const size_t count =
      static_cast<size_t>(std::lower_bound(lost.begin(), lost.end(), up_to,
                                           [](const LostRecord& record, uint64_t ticks) {
                                             return record.ticks < ticks;
                                           }) -
                          lost.begin());
  // Each run of records with one context (one span: the context holds its id), from the first
  // to just after the last, ending before the next record and inside the losses of them all.
  size_t first = 0;
  while (first < count) {
    LostRecord& start = lost[first];
    uint64_t limit = start.limit;
    size_t last = first;
    while (last + 1 < count && lost[last + 1].context == start.context &&
           lost[last + 1].ticks < limit) {
      limit = std::min(limit, lost[++last].limit);
    }
    uint64_t end = std::min(chunk_->TicksJustAfter(lost[last].ticks), limit);
    if (last + 1 < lost.size()) end = std::min(end, lost[last + 1].ticks);
    const uint64_t begin = std::max(start.ticks, thread->lost_written_until);
    if (begin < end) {
      WriteInterval(owner, begin, end, start.context, &start.id, pending_bytes);
      thread->lost_written_until = end;
    }
    first = last + 1;
  }
  lost.erase(lost.begin(), lost.begin() + static_cast<ptrdiff_t>(count));
}

void SpanIntervals::SetOpen(int32_t tid, uint64_t virtual_thread_id, uint64_t begin_ticks,
                            uint64_t read_ticks, const ContextSnapshot& context) {
  SetThreadOpen(&threads_[SpanOwnerKey(tid, virtual_thread_id)], begin_ticks, read_ticks, context);
  if (virtual_thread_id != 0)
    SetThreadOpen(&threads_[SpanOwnerKey(tid, 0)], read_ticks, read_ticks, {});
}

void SpanIntervals::SetThreadOpen(Thread* thread, uint64_t begin_ticks, uint64_t read_ticks,
                                  const ContextSnapshot& context) {
  const uint64_t since = context.empty() ? read_ticks : begin_ticks;
  const auto before = std::lower_bound(thread->unjoined.begin(), thread->unjoined.end(), since);
  // Records the open interval held when last read, which no drained span claimed: its span
  // ended before `since` and was lost in a full log. They keep the context they took.
  if (!thread->open_context.empty() && since != thread->open_begin) {
    for (auto it = thread->unjoined.begin(); it != before; ++it) {
      if (*it >= thread->open_begin && *it < thread->open_read &&
          *it >= thread->lost_written_until) {
        AddLost(thread, LostRecord{*it, since, thread->open_context, thread->open_id});
      }
    }
  }
  thread->unjoined.erase(thread->unjoined.begin(), before);
  thread->open_begin = begin_ticks;
  thread->open_read = read_ticks;
  if (!(context == thread->open_context)) thread->open_id = ContextIds::Kept{};
  thread->open_context = context;
}

void SpanIntervals::CutOpen(uint64_t owner, Thread* thread, uint64_t* pending_bytes) {
  if (thread->open_context.empty() || thread->unjoined.empty()) return;
  // The records the open interval holds: from its begin to when it was read.
  const auto first =
      std::lower_bound(thread->unjoined.begin(), thread->unjoined.end(), thread->open_begin);
  const auto after = std::lower_bound(first, thread->unjoined.end(), thread->open_read);
  if (first == after) return;
  const uint64_t begin = std::max(thread->open_begin, thread->written_until);
  const uint64_t cut = chunk_->TicksJustAfter(*(after - 1));
  if (cut <= begin) return;
  WriteInterval(owner, begin, cut, thread->open_context, &thread->open_id, pending_bytes);
  KeepLast(&thread->written_parts, WrittenPart{begin, cut});
  thread->written_until = cut;
  thread->unjoined.erase(thread->unjoined.begin(), after);
}

void SpanIntervals::Settle(uint64_t horizon, uint64_t* pending_bytes) {
  settled_ = std::max(settled_, horizon);
  for (auto it = threads_.begin(); it != threads_.end();) {
    Thread& thread = it->second;
    while (thread.first_pending < thread.spans.size() &&
           thread.spans[thread.first_pending].end_ticks <= horizon) {
      Pending& front = thread.spans[thread.first_pending++];
      if (!front.written && (front.triggered || front.cut || write_all_)) {
        Write(it->first, &front, pending_bytes);
      }
    }
    // Every record before the horizon has been joined: those in losses can be written (which
    // keeps the list short for the ordered inserts).
    if (!thread.lost.empty()) WriteLost(it->first, &thread, horizon, pending_bytes);
    // Settled ones stay joinable for late records a while (the last kLateJoinSpans).
    if (thread.first_pending > kLateJoinSpans) {
      thread.spans.DropFront(thread.first_pending - kLateJoinSpans);
      thread.first_pending = kLateJoinSpans;
    }
    // A virtual thread leaves nothing behind once it holds nothing but settled spans: there are
    // many (a late record of one joins no span).
    const bool idle = (it->first >> 63) == 0 && thread.first_pending == thread.spans.size() &&
                      thread.unjoined.empty() && thread.guessed.empty() && thread.lost.empty() &&
                      thread.open_context.empty();
    if (idle && &thread == last_thread_) last_thread_ = nullptr;
    it = idle ? threads_.erase(it) : std::next(it);
  }
}

void SpanIntervals::WriteTriggered(bool chunk_end, uint64_t* pending_bytes) {
  for (auto& [owner, thread] : threads_) {
    for (size_t index = thread.first_pending; index < thread.spans.size(); index++) {
      Pending& pending = thread.spans[index];
      if (!pending.triggered || pending.written) continue;
      // Within a chunk the span's contextId stays valid for later records: write it whole.
      if (!chunk_end || pending.end_ticks <= settled_) {
        Write(owner, &pending, pending_bytes);
        continue;
      }
      // Records of the next chunk may still fall in it: write it up to just after its last
      // record; the rest follows when settled (or when a record triggers it again).
      const uint64_t cut = std::min(pending.end_ticks, chunk_->TicksJustAfter(pending.last_record));
      WriteInterval(owner, pending.begin_ticks, cut, pending.context, &pending.id, pending_bytes);
      pending.begin_ticks = cut;
      pending.triggered = false;
      pending.cut = true;
      pending.written = cut == pending.end_ticks;
    }
    WriteLost(owner, &thread, UINT64_MAX, pending_bytes);
    CutOpen(owner, &thread, pending_bytes);
    if (chunk_end) WriteGuessed(owner, &thread, pending_bytes);
  }
}

void SpanIntervals::CutAt(uint64_t ticks, uint64_t* pending_bytes) {
  for (auto& [owner, thread] : threads_) {
    for (size_t index = thread.first_pending; index < thread.spans.size(); index++) {
      Pending& pending = thread.spans[index];
      if (pending.written || pending.begin_ticks >= ticks || pending.end_ticks <= ticks) {
        continue;
      }
      // Its begin stays: a later chunk writes it from there again (see the header).
      WriteInterval(owner, pending.begin_ticks, ticks, pending.context, &pending.id, pending_bytes);
      pending.triggered = false;
    }
    const uint64_t begin = std::max(thread.open_begin, thread.written_until);
    if (!thread.open_context.empty() && begin < ticks && thread.last_end <= thread.open_begin) {
      WriteInterval(owner, begin, ticks, thread.open_context, &thread.open_id, pending_bytes);
      thread.unjoined.erase(
          thread.unjoined.begin(),
          std::lower_bound(thread.unjoined.begin(), thread.unjoined.end(), ticks));
    }
  }
}

void SpanIntervals::WriteGuessed(uint64_t owner, Thread* thread, uint64_t* pending_bytes) {
  // Each run of records with one context, from where the thread's written intervals end (the
  // open span's begin, when it is that span's context and the run does not start before it:
  // the converted span clock can put a record of the open span just before its begin) to just
  // after its last record; at least a tick, so that the chunk carries the context even of a
  // record that a cut covered already. Spans drained later begin after it (Add).
  size_t first = 0;
  while (first < thread->guessed.size()) {
    const ContextSnapshot& context = thread->guessed[first].context;
    size_t last = first;
    while (last + 1 < thread->guessed.size() && thread->guessed[last + 1].context == context) {
      last++;
    }
    // After every span added so far, even one a later drain brought (the open interval's
    // values are that drain's).
    const uint64_t written = std::max(thread->written_until, thread->last_end);
    const uint64_t first_ticks = thread->guessed[first].ticks;
    const uint64_t begin = std::max(
        context == thread->open_context ? std::min(thread->open_begin, first_ticks) : first_ticks,
        written);
    const uint64_t end = std::max(chunk_->TicksJustAfter(thread->guessed[last].ticks), begin + 1);
    WriteInterval(owner, begin, end, context, &thread->guessed[first].id, pending_bytes);
    KeepLast(&thread->written_parts, WrittenPart{begin, end});
    thread->written_until = end;
    first = last + 1;
  }
  thread->guessed.clear();
  thread->unjoined.erase(
      thread->unjoined.begin(),
      std::lower_bound(thread->unjoined.begin(), thread->unjoined.end(), thread->written_until));
}

void SpanIntervals::Write(uint64_t owner, Pending* pending, uint64_t* pending_bytes) {
  pending->written = true;
  pending->written_chunk = chunk_->chunk_number();
  WriteInterval(owner, pending->begin_ticks, pending->end_ticks, pending->context, &pending->id,
                pending_bytes);
}

void SpanIntervals::WriteInterval(uint64_t owner, uint64_t begin_ticks, uint64_t end_ticks,
                                  const ContextSnapshot& context, ContextIds::Kept* id,
                                  uint64_t* pending_bytes) {
  const uint32_t chunk = chunk_->chunk_number();
  for (size_t slot = 0; slot < attribute_count_; slot++) {
    const uint32_t id = context.attributes[slot];
    if (id != Dictionary::kUnsetId) values_->Mark(id, chunk, pending_bytes);
  }
  const uint64_t context_id = ids_->IdOf(context, chunk, id);
  chunk_->NoteEventTicks(end_ticks);
  encoder_->AppendContext(
      ContextEventFields{begin_ticks, end_ticks - begin_ticks,
                         owner >> 63
                             ? thread_key_(static_cast<int32_t>(static_cast<uint32_t>(owner)), 0)
                             : thread_key_(0, owner),
                         context_id, &context, attribute_count_},
      &chunk_->out());
  spans_written_++;
}

}  // namespace ctxprof
