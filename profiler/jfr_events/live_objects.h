// LiveObjects: the allocation samples whose objects the runtime tracks for the `live` option,
// until the recording ends and the ones still alive become profiler.LiveObject events.
//
// The runtime gives every kept allocation sample a reference to its object (SampleRecord's
// event.object_ref; the JVM layer's JNI weak global reference) and answers, through an
// ObjectTracker, whether that object is still alive (not yet collected) and releases the
// reference. LiveObjects owns the references of the samples the writer has seen: at most
// `capacity` at a time. When full, it first forgets the samples whose objects were collected
// (one Alive() call each); if it is still full, the new sample's reference is released at once
// and counted as untracked. Finish() reports the live ones and releases every reference.
// "Alive" means not collected by then: no garbage collection is forced, so an object that became
// unreachable since the last collection still counts (call System.gc() before stopping to see
// reachable objects only).
//
// Thread safety: none; owned by the JFR writer's thread. The tracker's calls run on that thread
// (the session's background thread, or the thread that stops the session).
#ifndef CTXPROF_PROFILER_JFR_EVENTS_LIVE_OBJECTS_H_
#define CTXPROF_PROFILER_JFR_EVENTS_LIVE_OBJECTS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "context/context_block.h"
#include "profiler/jfr_events/object_tracker.h"

namespace ctxprof {

// What a profiler.LiveObject event needs of its allocation sample.
struct TrackedAllocation {
  uint64_t ref;
  uint64_t ticks;  // when the object was allocated (sampled)
  int32_t tid;
  uint32_t stack_key;
  uint32_t class_key;
  uint64_t object_bytes;
  ContextSnapshot context;  // the allocating thread's context when it was sampled
};

class LiveObjects {
 public:
  static constexpr size_t kDefaultCapacity = 65536;

  LiveObjects(ObjectTracker* tracker, size_t capacity) : tracker_(tracker), capacity_(capacity) {}
  ~LiveObjects();  // releases every reference still held
  LiveObjects(const LiveObjects&) = delete;
  LiveObjects& operator=(const LiveObjects&) = delete;

  void Add(const TrackedAllocation& allocation);
  // Calls `emit` for each tracked allocation whose object is alive, in sampling order, then
  // releases every reference.
  void Finish(const std::function<void(const TrackedAllocation&)>& emit);

  size_t tracked() const { return tracked_.size(); }
  uint64_t untracked() const { return untracked_; }

 private:
  ObjectTracker* const tracker_;
  const size_t capacity_;
  std::vector<TrackedAllocation> tracked_;
  uint64_t untracked_ = 0;
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_JFR_EVENTS_LIVE_OBJECTS_H_
