// JavaThreadEnv: the interrupted thread's JNIEnv, inside a signal handler, for any Java thread
// of a HotSpot VM, whether or not it ever called into libctxprof (AsyncGetCallTrace needs the
// JNIEnv; jni/java_stack_walker.h).
//
// HotSpot keeps the current Thread* in a pthread key set on every thread attached to the VM, and
// a JavaThread embeds its JNIEnv, so JNIEnv* = Thread* + a per-build constant. Neither the key
// nor that member is exported, so Resolve() finds both on a thread whose JNIEnv it has:
//   1. sizeof(Thread) and sizeof(JavaThread) from the VM's type table (jni/vm_structs.h): the
//      JNIEnv, a JavaThread member, lies at least sizeof(Thread) and at most
//      sizeof(JavaThread) - sizeof(JNIEnv) bytes after the JavaThread's start;
//   2. every pthread key 0..PTHREAD_KEYS_MAX-1 is read with pthread_getspecific; exactly one
//      must hold a pointer P with JNIEnv - P in that range. That key is the VM's, and
//      JNIEnv - P is the offset (values seen: docs/JAVA.md, "Java stacks");
//   3. the JNI function table pointer (JNIEnv->functions, one table per VM) is kept to
//      recognise a JavaThread later.
// No private Java field is read, so Resolve also works on a virtual thread (the key holds its
// carrier).
//
// Why a reader cannot crash: Current() reads the key (pthread_getspecific: glibc reads the
// thread's own descriptor, no lock, no allocation) and then the one word at P + offset through
// FaultGuard::SafeRead. It returns that address only if the word is the JNI function table, i.e.
// P is a JavaThread with a live JNIEnv; a GC, compiler or VM thread, a thread not attached to the
// VM, or a thread being torn down gives nullptr. SetJNIFunctionTable changes the table's
// contents, not its address, so the check holds.
//
// Thread safety: Resolve is called off the signal path (agent load, VMInit) and serialised by
// the caller; it stores the offset and the table pointer before publishing the key with a
// release store, and Current() loads the key with acquire before reading them, so a handler
// sees either no key or a complete resolution. Current() is async-signal-safe once
// FaultGuard is installed (a session's start does that before any handler runs).
#ifndef CTXPROF_JNI_JAVA_THREAD_ENV_H_
#define CTXPROF_JNI_JAVA_THREAD_ENV_H_

#include <jni.h>

#include "profiler/base/status.h"

namespace ctxprof {

class JavaThreadEnv {
 public:
  // Finds the VM's current-thread key and the JNIEnv offset from `jni`, the calling thread's
  // JNIEnv. Idempotent once it succeeded. Fails (kUnavailable) when the VM is not HotSpot-like.
  static Status Resolve(JNIEnv* jni);
  // The calling thread's JNIEnv, or nullptr (not resolved, not a Java thread). Async-signal-safe.
  static JNIEnv* Current();
  // The JavaThread that embeds `env` (a JNIEnv of this VM), or nullptr before Resolve succeeded.
  // Async-signal-safe (arithmetic only; reads nothing).
  static const char* ThreadOf(JNIEnv* env);
};

}  // namespace ctxprof

#endif  // CTXPROF_JNI_JAVA_THREAD_ENV_H_
