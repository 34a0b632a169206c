#include "profiler/session/sample_reorderer.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace ctxprof {
namespace {

static_assert(alignof(SampleRecord) <= alignof(uint64_t), "arena words align every record");

size_t Words(size_t bytes) { return (bytes + sizeof(uint64_t) - 1) / sizeof(uint64_t); }

// Appends `record` with its first `frame_count` frames to `arena`; returns its offset.
template <typename Arena>
size_t Append(const SampleRecord& record, uint32_t frame_count, Arena* arena) {
  const size_t offset = arena->size();
  const size_t bytes = offsetof(SampleRecord, frames) + frame_count * sizeof(RawFrame);
  arena->resize(offset + Words(bytes));
  memcpy(arena->data() + offset, &record, bytes);
  reinterpret_cast<SampleRecord*>(arena->data() + offset)->frame_count = frame_count;
  return offset;
}

// The record at `offset`: a SampleRecord cut after its frame_count frames, which is all any
// reader of a record looks at (as for the sample buffer's slots).
template <typename Arena>
const SampleRecord& At(const Arena& arena, size_t offset) {
  return *reinterpret_cast<const SampleRecord*>(arena.data() + offset);
}

}  // namespace

SampleReorderer::SampleReorderer() = default;

void SampleReorderer::Add(const SampleRecord& record) {
  const uint32_t frame_count = std::min<uint32_t>(record.frame_count, kMaxStackDepth);
  if (releasing_) {
    added_while_releasing_.push_back(
        {record.ticks, arrivals_++, Append(record, frame_count, &spare_)});
    return;
  }
  held_.push_back({record.ticks, arrivals_++, Append(record, frame_count, &arena_)});
}

void SampleReorderer::Release(uint64_t horizon,
                              const std::function<void(const SampleRecord&)>& emit) {
  if (held_.empty()) return;
  auto earlier = [](const Held& a, const Held& b) {
    return a.ticks != b.ticks ? a.ticks < b.ticks : a.arrival < b.arrival;
  };
  // Records mostly arrive in tick order: the check is one pass, the sort is rarely needed.
  if (!std::is_sorted(held_.begin(), held_.end(), earlier)) {
    std::sort(held_.begin(), held_.end(), earlier);
  }
  size_t released = 0;
  releasing_ = true;
  for (; released < held_.size() && held_[released].ticks <= horizon; released++) {
    emitted_ = released + 1;
    emit(At(arena_, held_[released].offset));
  }
  releasing_ = false;
  emitted_ = 0;
  if (released == 0) return;  // nothing was emitted, so nothing was added
  // Keep the rest: their records move to the spare arena (after those added meanwhile), which
  // becomes the arena.
  for (size_t i = released; i < held_.size(); i++) {
    const SampleRecord& kept = At(arena_, held_[i].offset);
    held_[i].offset = Append(kept, kept.frame_count, &spare_);
  }
  arena_.swap(spare_);
  spare_.clear();
  held_.erase(held_.begin(), held_.begin() + released);
  held_.insert(held_.end(), added_while_releasing_.begin(), added_while_releasing_.end());
  added_while_releasing_.clear();
}

}  // namespace ctxprof
