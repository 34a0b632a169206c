#include "profiler/session/wall_repeats.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace ctxprof {

namespace {

// Copies the header and the record's own frames (not the whole fixed array).
void CopyRecord(const SampleRecord& from, SampleRecord* to) {
  std::memcpy(static_cast<void*>(to), &from, offsetof(SampleRecord, frames));
  std::copy_n(from.frames, std::min<uint32_t>(from.frame_count, kMaxStackDepth), to->frames);
}

}  // namespace

WallRepeats::Last& WallRepeats::LastOf(pid_t tid) {
  Recent& recent = recent_[static_cast<uint32_t>(tid) % recent_.size()];
  if (recent.last == nullptr || recent.tid != tid) recent = Recent{tid, &last_[tid]};
  return *recent.last;
}

WallRepeats::Last& WallRepeats::Remember(const SampleRecord& record) {
  Last& last = LastOf(record.tid);
  last.used_ticks = std::max(last.used_ticks, record.ticks);
  // Default-initialized: CopyRecord writes what is read, and value-initializing would zero all
  // kMaxStackDepth frames (32 KiB) per thread.
  if (last.newest == nullptr) {
    last.newest.reset(new SampleRecord);
    CopyRecord(record, last.newest.get());
    return last;
  }
  if (record.ticks >= last.newest->ticks) {
    // The older one's memory takes the new sample, which becomes the newest.
    if (last.older == nullptr) last.older.reset(new SampleRecord);
    last.older.swap(last.newest);
    CopyRecord(record, last.newest.get());
  } else if (last.older == nullptr || record.ticks >= last.older->ticks) {
    if (last.older == nullptr) last.older.reset(new SampleRecord);
    CopyRecord(record, last.older.get());
  }
  return last;
}

const SampleRecord& WallRepeats::CopyAs(const SampleRecord& sample, uint64_t ticks,
                                        uint32_t weight) {
  CopyRecord(sample, scratch_.get());
  scratch_->ticks = ticks;
  scratch_->weight = weight;
  return *scratch_;
}

const SampleRecord* WallRepeats::Repeat(const SampleRecord& repeat) {
  const uint64_t named = repeat.event.amount;
  Last& last = LastOf(repeat.tid);
  last.used_ticks = std::max(last.used_ticks, repeat.ticks);
  for (const SampleRecord* kept : {last.newest.get(), last.older.get()}) {
    if (kept != nullptr && kept->ticks == named) return &CopyAs(*kept, repeat.ticks, repeat.weight);
  }
  if (last.older != nullptr && named < last.older->ticks) {
    // Its sample came before two later ones and is no longer kept: count the time, no stack.
    CopyRecord(repeat, scratch_.get());
    scratch_->flags &= static_cast<uint8_t>(~kSampleRepeatLast);
    scratch_->event = EventFields();
    return scratch_.get();
  }
  last.held.push_back(Held{repeat.ticks, named, repeat.weight});
  return nullptr;
}

const SampleRecord* WallRepeats::NextHeldRepeatOf(Last* last, const SampleRecord& sample) {
  for (size_t i = 0; i < last->held.size(); ++i) {
    if (last->held[i].repeated_ticks != sample.ticks) continue;
    const Held held = last->held[i];
    last->held.erase(last->held.begin() + static_cast<long>(i));
    return &CopyAs(sample, held.ticks, held.weight);
  }
  return nullptr;
}

void WallRepeats::Forget(uint64_t ticks) {
  const size_t before = last_.size();
  for (auto it = last_.begin(); it != last_.end();) {
    it = it->second.used_ticks < ticks ? last_.erase(it) : std::next(it);
  }
  if (last_.size() != before) recent_ = {};
}

}  // namespace ctxprof
