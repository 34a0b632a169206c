// JvmAgent: libctxprof inside a JVM. Entry points: Agent_OnLoad (-agentpath:libctxprof.so=...),
// Agent_OnAttach (dynamic attach: one control command per load, jni/attach_command.h) and
// JNI_OnLoad (System.load from io.ctxprof.Profiler).
//
// What Init() sets up, once per process (later entry points find it done):
//  * a jvmtiEnv with can_generate_compiled_method_load_events, can_get_line_numbers and, when
//    the VM offers it (JDK 21+), can_support_virtual_threads;
//  * events: VMInit (start the agent's session), VMDeath (stop the running session, so the
//    recording is finished on every exit path: end of main, System.exit, an uncaught exception,
//    SIGTERM), ThreadStart/ThreadEnd (the thread's JNIEnv for AsyncGetCallTrace, its context
//    block cleared, Profiler::OnThreadStart/OnThreadEnd, its Java name and id), ClassPrepare
//    (jmethodIDs for the class's methods, which AsyncGetCallTrace needs), CompiledMethodLoad and
//    DynamicCodeGenerated (AsyncGetCallTrace walks compiled frames through the code they
//    describe; CompiledMethodLoad also feeds JavaStackWalker's compiled set);
//  * virtual threads (VirtualThreads, jni/virtual_threads.h) when the capability is there;
//  * the Profiler's RuntimeHooks: the Java stack walker, the JVM resolvers, attaching the
//    session's background thread to the VM as a daemon, and the allocation and lock event
//    sources (JvmEvents, jni/jvm_events.h: a jvmtiEnv of its own).
// Loaded late (JNI_OnLoad/Agent_OnAttach) it also creates jmethodIDs for every loaded class and
// replays CompiledMethodLoad/DynamicCodeGenerated with GenerateEvents. At VMInit, or at once when
// loaded late, it resolves HotSpot's current-thread key (jni/java_thread_env.h), so threads that
// never reach ThreadStart or libctxprof still get Java frames.
//
// Every JVMTI/JNI failure is turned into a one-line message on stderr ("ctxprof: ...") and a
// reduced feature (e.g. no Java frames), never into a failure of the JVM.
#ifndef CTXPROF_JNI_JVM_AGENT_H_
#define CTXPROF_JNI_JVM_AGENT_H_

#include <jni.h>
#include <jvmti.h>

#include "profiler/base/status.h"

namespace ctxprof {

class JvmAgent {
 public:
  // Idempotent. `live`: the VM is already running (JNI_OnLoad, Agent_OnAttach). Fails
  // (kUnavailable) when no JVMTI environment could be had or its callbacks not installed.
  static Status Init(JavaVM* vm, bool live);
  // The JVMTI environment, or nullptr before a successful Init.
  static jvmtiEnv* jvmti();
  // A JNI entry point of libctxprof was called on this thread: records its JNIEnv and Java
  // identity if not yet known (threads started before the library was loaded).
  static void SeeCurrentThread(JNIEnv* env);

  // io.ctxprof.OtelRecord, registered when it initializes: its static sync() turns the Java
  // writers' OpenTelemetry publishing on. SyncJavaOtel calls it (if registered) after a start
  // the Java side did not run itself (attach); it clears any exception the call raised.
  static void RegisterJavaOtel(JNIEnv* env, jclass otel_record);
  static void SyncJavaOtel(JNIEnv* env);
};

}  // namespace ctxprof

#endif  // CTXPROF_JNI_JVM_AGENT_H_
