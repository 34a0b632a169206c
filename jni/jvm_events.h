// JvmEvents: the JVM's sources of runtime events for the EventRecorder
// (profiler/sampler/event_recorder.h), behind RuntimeHooks::events_start/events_stop.
//
//  * Allocations (alloc=): JVMTI SampledObjectAlloc (JDK 11+, JEP 331) with
//    SetHeapSamplingInterval(EventRecorder::SamplingInterval(rules)). Chosen over hooking
//    HotSpot's TLAB slow paths (what async-profiler's TLAB engine traps with breakpoints on
//    non-exported functions): a documented, supported API on every JDK 11+, posted on the
//    allocating thread after the allocation with the object's exact size, byte-accurate sampling
//    distances (so weights are unbiased, event_recorder.h), no dependency on debug symbols, and
//    no per-TLAB bias. Costs: allocations removed by escape analysis are not seen (they are not
//    heap allocations), and each sample takes a JVMTI stack walk.
//  * Contended monitor enters (lock=): JVMTI MonitorContendedEnter stores the wait's start in
//    initial-exec TLS with the thread's Java id; MonitorContendedEntered records the wait. A
//    virtual thread that unmounts while it waits for a monitor (JDK 24+) may be entered on another
//    carrier: the ids then differ and the wait is dropped, never misattributed.
//  * Parks (lock=): JVMTI has no park event. jdk.internal.misc.Unsafe.park(ZJ)V, which every
//    LockSupport.park* of a platform thread ends in, is rebound once per process to a hook
//    (native_rebinder.h) that reads the clock, calls the JVM's own entry and, when the session
//    keeps the wait, records it with the blocker (Thread.parkBlocker) as parkedClass and the
//    timeout / deadline. Chosen over bytecode instrumentation of LockSupport (a class-file
//    rewriter with stack maps in C++, or a Java agent jar) and over JVMTI breakpoints or frame
//    pops (which deoptimize and force interpreter-only mode on the parking thread); sampling
//    thread states cannot give durations. Virtual threads park by unmounting, not in
//    Unsafe.park, so only their pinned parks are seen. The hook stays bound after the session
//    ends and then only forwards the call.
// Each recorded event's stack comes from JVMTI GetStackTrace on the current thread (no
// safepoint, no handshake), converted in place in the record; frames are typed like the
// AsyncGetCallTrace walker's (JavaStackWalker::KindOf). Class names (objectClass, monitorClass,
// parkedClass) come from GetClassSignature and are interned in EventRecorder::class_names().
//
// What an allocation sample costs, and why the stack is not taken with AsyncGetCallTrace
// (measurements: docs/SAMPLER.md): the JVM's posting of the event is a fraction of a microsecond;
// GetStackTrace is most of the rest (HotSpot builds a vframe per Java frame and decodes its debug
// information: ~4-5 µs of CPU for ~30 compiled frames on JDK 17 and 25). AsyncGetCallTrace would
// be far cheaper but cannot walk from here: in this callback the thread is in native state and
// its last-Java-frame anchor is at the allocation runtime stub that compiled (C1 or C2) code
// called, and ASGCT then answers ticks_not_walkable_not_Java (-4). It walked 0.5 % (JDK 17) and
// 2 % (JDK 25) of the samples of bench/java's OverheadWorkload alloc, and every sample of a JVM
// run with -Xint: allocations from the interpreter. A cheaper stack needs a walk of our own from
// that anchor that also yields methods and bytecode indexes. JavaFrameTypes already walks from it
// (stepping over the stub): called in this callback on GetStackTrace's frames (a one-off
// experiment on that workload, alloc=64k), it followed every frame of every sample on JDK 17 and
// 25, each physical frame's Method* agreeing with GetStackTrace's, in about an eighth of
// GetStackTrace's time.
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
};

}  // namespace ctxprof

#endif  // CTXPROF_JNI_JVM_EVENTS_H_
