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

void WallRepeats::Remember(const SampleRecord& record) {
  Last& last = last_[record.tid];
  // Default-initialized: CopyRecord writes what is read, and value-initializing would zero all
  // kMaxStackDepth frames (32 KiB) per thread.
  if (last.record == nullptr) last.record.reset(new SampleRecord);
  CopyRecord(record, last.record.get());
  last.used_ticks = record.ticks;
}

const SampleRecord& WallRepeats::Repeat(const SampleRecord& repeat) {
  auto found = last_.find(repeat.tid);
  if (found == last_.end()) return repeat;
  Last& last = found->second;
  CopyRecord(*last.record, scratch_.get());
  scratch_->ticks = repeat.ticks;
  scratch_->weight = repeat.weight;
  scratch_->flags = last.record->flags;
  last.used_ticks = repeat.ticks;
  return *scratch_;
}

void WallRepeats::Forget(uint64_t ticks) {
  for (auto it = last_.begin(); it != last_.end();) {
    it = it->second.used_ticks < ticks ? last_.erase(it) : std::next(it);
  }
}

}  // namespace ctxprof
