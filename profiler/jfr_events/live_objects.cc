#include "profiler/jfr_events/live_objects.h"

#include <algorithm>

namespace ctxprof {

LiveObjects::~LiveObjects() {
  for (const TrackedAllocation& allocation : tracked_) tracker_->Release(allocation.ref);
}

void LiveObjects::Add(const TrackedAllocation& allocation) {
  if (tracked_.size() >= capacity_) {
    // Forget the collected ones, keeping the order of the others.
    auto alive_end = std::stable_partition(
        tracked_.begin(), tracked_.end(),
        [this](const TrackedAllocation& tracked) { return tracker_->Alive(tracked.ref); });
    for (auto it = alive_end; it != tracked_.end(); ++it) tracker_->Release(it->ref);
    tracked_.erase(alive_end, tracked_.end());
  }
  if (tracked_.size() >= capacity_) {
    tracker_->Release(allocation.ref);
    untracked_++;
    return;
  }
  tracked_.push_back(allocation);
}

void LiveObjects::Finish(const std::function<void(const TrackedAllocation&)>& emit) {
  for (const TrackedAllocation& allocation : tracked_) {
    if (tracker_->Alive(allocation.ref)) emit(allocation);
    tracker_->Release(allocation.ref);
  }
  tracked_.clear();
}

}  // namespace ctxprof
