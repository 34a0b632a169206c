// ObjectTracker: the runtime's answer, for the `live` option, to whether a sampled object is
// still alive. The JVM layer implements it with JNI weak global references (jni/jvm_events.h);
// LiveObjects (live_objects.h) owns the references and calls it.
//
// Thread safety: called on one thread at a time, the JFR writer's (live_objects.h).
#ifndef CTXPROF_PROFILER_JFR_EVENTS_OBJECT_TRACKER_H_
#define CTXPROF_PROFILER_JFR_EVENTS_OBJECT_TRACKER_H_

#include <cstdint>

namespace ctxprof {

// The runtime's view of sampled objects (jni/jvm_events.h implements it with JNI weak refs).
class ObjectTracker {
 public:
  virtual ~ObjectTracker() = default;
  // Whether the object of `ref` has not been collected.
  virtual bool Alive(uint64_t ref) = 0;
  // Gives `ref` back to the runtime; it is not used again.
  virtual void Release(uint64_t ref) = 0;
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_JFR_EVENTS_OBJECT_TRACKER_H_
