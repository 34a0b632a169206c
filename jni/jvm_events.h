// JvmEvents: the JVM's sources of runtime events for the EventRecorder
// (profiler/sampler/event_recorder.h), behind RuntimeHooks::events_start/events_stop. Why these
// sources and what they cost: docs/SAMPLER.md ("Runtime events") and docs/JAVA.md ("Allocation
// and lock events").
//
//  * Allocations (alloc=): JVMTI SampledObjectAlloc (JDK 11+) with
//    SetHeapSamplingInterval(EventRecorder::SamplingInterval(rules)).
//  * Contended monitor enters (lock=): JVMTI MonitorContendedEnter stores the wait's start in
//    initial-exec TLS with the thread's Java id; MonitorContendedEntered records the wait. A
//    virtual thread entered on another carrier than the one it waited on has another id: the
//    wait is dropped, never misattributed.
//  * Parks (lock=): jdk.internal.misc.Unsafe.park(ZJ)V is rebound once per process to a hook
//    (native_rebinder.h) that reads the clock, calls the JVM's own entry and, when the session
//    keeps the wait, records it with the blocker (Thread.parkBlocker) as parkedClass and the
//    timeout / deadline. The hook stays bound after the session ends and then only forwards.
// Each recorded event's stack comes from the VM's own walk (VmStackWalker::WalkStopped) from the
// thread's last-Java-frame anchor: the callbacks run with the thread stopped in the VM (JVMTI
// posts them in native state, its anchor walkable), the hook in a native method. Where that walk
// declines (a mounted virtual thread, a deoptimized frame, a method without a jmethodID), JVMTI
// GetStackTrace on the current thread (no safepoint, no handshake) takes the stack, converted in
// place in the record, its frames typed like the AsyncGetCallTrace walker's
// (JavaStackWalker::KindOf). Class names come from GetClassSignature and are interned in
// EventRecorder::class_names(); the id becomes the class's JVMTI tag in our environment (where
// the JVM grants can_tag_objects), so a class's signature is built once per process, not per
// event.
//
// The live option: each kept allocation sample also gets a JNI weak global reference to its
// object (event.object_ref); NewObjectTracker() answers for those references at the end
// (profiler/jfr_events/live_objects.h: IsSameObject with null = collected). Its calls need a
// thread attached to the JVM (the session's writer thread, or the thread stopping the session);
// on another thread an object counts as collected and its reference is not released.
//
// Nothing blocks: the callbacks and the hook hold the EventRecorder's session only while they
// fill a record (never across the park itself); every failure drops the event.
//
// Thread safety: Init once (JvmAgent::Init); Start/Stop serialised by the Profiler; the
// callbacks and the hook run on application threads.
#ifndef CTXPROF_JNI_JVM_EVENTS_H_
#define CTXPROF_JNI_JVM_EVENTS_H_

#include <jni.h>

#include <memory>
#include <string>

#include "profiler/base/status.h"
#include "profiler/jfr_events/object_tracker.h"
#include "profiler/sampler/event_recorder.h"

namespace ctxprof {

class JvmEvents {
 public:
  // Creates a jvmtiEnv of its own (capabilities: sampled allocations, monitor events) with the
  // callbacks, all events off. A failure is kept and returned by every Start.
  static void Init(JavaVM* vm);
  // RuntimeHooks::events_start: turns on what `rules` ask for (binding the park hook the first
  // time). On failure nothing stays on and the Status names the option and the cause:
  // kUnavailable (the JVM refused a JVMTI capability or event, or the park hook) or kWrongState
  // (the calling thread is not a Java thread).
  static Status Start(const EventRules& rules);
  // RuntimeHooks::events_stop.
  static void Stop();
  // RuntimeHooks::object_tracker.
  static std::unique_ptr<ObjectTracker> NewObjectTracker();
  // With CTXPROF_CHECK_JAVA_WALK=1 (JavaStackWalker::Checking, for tests), every event's stack
  // is JVMTI's and VmStackWalker::WalkStopped runs beside it: the report counts the stacks where
  // it agreed frame for frame (method, bci), differed or declined, and describes the first
  // differences. "" without the variable.
  static std::string CheckReport();
};

}  // namespace ctxprof

#endif  // CTXPROF_JNI_JVM_EVENTS_H_
