// JvmThreads: which OS thread is which Java thread (name and Thread id), for the JFR thread
// resolver.
//
// A Java thread is recorded on itself: at JVMTI ThreadStart, at VMInit (the main thread) and on
// its first call into libctxprof (threads that started before the library was loaded). Entries
// are keyed by tid and replaced when a tid is reused; a sample of an exited thread drained after
// its tid was reused would show the new thread's name (a window of one drain interval). A rename
// after the thread was recorded (Thread.setName) is not seen.
//
// Thread safety: all functions are thread-safe (one mutex); never call them from a signal
// handler.
#ifndef CTXPROF_JNI_JVM_THREADS_H_
#define CTXPROF_JNI_JVM_THREADS_H_

#include <jni.h>
#include <jvmti.h>
#include <sys/types.h>

#include <cstdint>
#include <string>

namespace ctxprof {

class JvmThreads {
 public:
  // Records the calling thread (`thread` is its java.lang.Thread). JVMTI/JNI failures leave
  // the thread unrecorded (it then gets its OS name).
  static void RecordCurrent(jvmtiEnv* jvmti, JNIEnv* jni, jthread thread);
  static bool Lookup(pid_t tid, std::string* name, int64_t* java_thread_id);
  // A new local reference to the java.lang.Thread recorded for `tid` (held weakly), or null.
  static jobject ThreadOf(JNIEnv* env, pid_t tid);
};

}  // namespace ctxprof

#endif  // CTXPROF_JNI_JVM_THREADS_H_
