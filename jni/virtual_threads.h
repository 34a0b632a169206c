// VirtualThreads: keeps a virtual thread's context with the virtual thread, not with its
// carrier, and tells the signal handler which virtual thread a carrier runs (JDK 21+, JVMTI
// can_support_virtual_threads).
//
// The Java API writes a virtual thread's context into its carrier's block (through JNI, which
// pins it to the carrier during the write). HotSpot's extension events
// com.sun.hotspot.events.VirtualThreadUnmount and ...Mount run on the carrier, in the virtual
// thread's context, just before it leaves the carrier and just after it is mounted on one:
//  * unmount: the carrier's block is copied into a snapshot owned by the virtual thread (JVMTI
//    thread-local storage, allocated on its first unmount) and the block is cleared, so samples
//    of the carrier (and of the next virtual thread it runs) carry no context of this one;
//  * mount: the snapshot, if any, is written into the new carrier's block, so the context
//    follows the virtual thread to whichever carrier runs it next;
//  * a virtual thread's first mount and its last unmount are not mount/unmount events but
//    VirtualThreadStart and VirtualThreadEnd: both clear the carrier's block (a new virtual
//    thread has no context; an ending one must not leave its context behind), and End frees
//    the snapshot.
//
// Identity: the same four callbacks keep the carrier's `mounted` slot (an initial-exec
// thread-local of the carrier, so the handler reads it without a lock or an allocation) equal to
// the mounted virtual thread's java.lang.Thread id (Thread.tid, read with JNI GetLongField), 0
// between an unmount and the next mount. Mounted() is the signal handler's probe
// (VirtualThreadProbe, profiler/sampler/signal_handler.h): a sample of a carrier running a
// virtual thread belongs to the virtual thread, as JDK 25's JFR attributes it. The name of a
// virtual thread that has one (Thread.ofVirtual().name(...); most have none) is kept from its
// VirtualThreadStart to its VirtualThreadEnd for the JFR writer (NameOf); reading the name field
// is one JNI call per start, the map is touched only for named ones.
//
// Limits: samples taken between a mount and the callback (or the unmount callback and the
// unmount) see the carrier's block as the previous callback left it: empty, and belong to the
// carrier. A virtual thread that was mounted before the agent enabled the events (a dynamic
// attach) is seen at its next mount; until then its samples belong to its carrier. The events
// make every mount/unmount slower (HotSpot takes a slow path while they are enabled).
//
// Thread safety: Enable() once, from JvmAgent::Init; the callbacks run on the carrier threads;
// Mounted() is async-signal-safe; NameOf may be called from any thread (one mutex).
#ifndef CTXPROF_JNI_VIRTUAL_THREADS_H_
#define CTXPROF_JNI_VIRTUAL_THREADS_H_

#include <jvmti.h>

#include <cstdint>
#include <string>

#include "profiler/base/status.h"

namespace ctxprof {

class VirtualThreads {
 public:
  // Finds and enables the mount/unmount extension events and VirtualThreadStart/End. Fails
  // (kUnavailable) naming what is missing.
  static Status Enable(jvmtiEnv* jvmti);
  // The VirtualThreadStart/End callbacks (installed by JvmAgent with its other callbacks).
  static void JNICALL OnStart(jvmtiEnv* jvmti, JNIEnv* jni, jthread thread);
  static void JNICALL OnEnd(jvmtiEnv* jvmti, JNIEnv* jni, jthread thread);

  // The java.lang.Thread id of the virtual thread mounted on the calling thread, 0 when none.
  static uint64_t Mounted();
  // The name of the virtual thread with java.lang.Thread id `id`, "" when it has none or is
  // unknown (ended, or started before the events were enabled).
  static std::string NameOf(uint64_t id);
};

}  // namespace ctxprof

#endif  // CTXPROF_JNI_VIRTUAL_THREADS_H_
