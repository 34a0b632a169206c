#include "profiler/recording/sample_reorderer.h"

#include <algorithm>

namespace ctxprof {

SampleReorderer::SampleReorderer() : scratch_(new SampleRecord()) {}

void SampleReorderer::Add(const SampleRecord& record) {
  const uint32_t frame_count = std::min<uint32_t>(record.frame_count, kMaxStackDepth);
  held_.push_back({record.ticks, arrivals_++, record.tid, record.kind, record.engine, record.flags,
                   record.state, record.weight, record.virtual_thread_id, record.context,
                   record.event, frame_count, frames_.size()});
  frames_.insert(frames_.end(), record.frames, record.frames + frame_count);
}

void SampleReorderer::Release(uint64_t horizon,
                              const std::function<void(const SampleRecord&)>& emit) {
  if (held_.empty()) return;
  std::sort(held_.begin(), held_.end(), [](const Held& a, const Held& b) {
    return a.ticks != b.ticks ? a.ticks < b.ticks : a.arrival < b.arrival;
  });
  size_t released = 0;
  SampleRecord& out = *scratch_;
  for (; released < held_.size() && held_[released].ticks <= horizon; released++) {
    const Held& sample = held_[released];
    out.ticks = sample.ticks;
    out.tid = sample.tid;
    out.kind = sample.kind;
    out.engine = sample.engine;
    out.flags = sample.flags;
    out.state = sample.state;
    out.weight = sample.weight;
    out.virtual_thread_id = sample.virtual_thread_id;
    out.context = sample.context;
    out.event = sample.event;
    out.frame_count = sample.frame_count;
    std::copy_n(frames_.begin() + sample.first_frame, sample.frame_count, out.frames);
    emit(out);
  }
  if (released == 0) return;
  // Keep the rest, with their frames moved to the front.
  std::vector<RawFrame> kept_frames;
  for (size_t i = released; i < held_.size(); i++) {
    Held& sample = held_[i];
    const size_t first = kept_frames.size();
    kept_frames.insert(kept_frames.end(), frames_.begin() + sample.first_frame,
                       frames_.begin() + sample.first_frame + sample.frame_count);
    sample.first_frame = first;
  }
  held_.erase(held_.begin(), held_.begin() + released);
  frames_ = std::move(kept_frames);
}

}  // namespace ctxprof
