// JavaStackWalker: Java frames of the interrupted thread, for the signal handler
// (profiler/sampler/signal_handler.h, JavaStackWalk): from the VM's own structures
// (VmStackWalker::Walk, jni/vm_stack_walker.h) wherever that walk vouches for the whole stack,
// else from HotSpot's AsyncGetCallTrace (ASGCT). Both give the same frames, ids, bcis and kinds
// (tests/java/io/ctxprof/agent/JavaWalkCheckTest.java compares them stack by stack), except one
// frame up from a stub, where the VM walk names the call site and ASGCT the debug record after
// it (VmStackWalker::Start; there the VM walk goes first). Why the VM walk goes first, what it
// costs and which stacks it leaves to ASGCT: docs/JAVA.md ("The VM's own walk first").
//
// ASGCT (exported from libjvm, found with dlsym) needs the interrupted thread's JNIEnv, which the
// handler cannot ask the VM for (JNI GetEnv is not async-signal-safe). Two sources, in order:
//  * an initial-exec TLS slot the JVM layer fills with SetCurrentThreadEnv() on the thread itself
//    (JVMTI ThreadStart, VMInit, every JNI call into libctxprof);
//  * for every other Java thread, HotSpot's own current-thread key (jni/java_thread_env.h).
// A thread found by neither gets no Java frames. ASGCT also needs a jmethodID for every method
// it reports; jvm_agent.cc creates them (class preparation) and keeps CompiledMethodLoad enabled.
//
// A thread interrupted in a stub the VM generated (an intrinsic, an adapter) gets the stub as its
// leaf frame, a native frame at the interrupted pc that JvmStubs names (jni/jvm_stubs.h), above
// the Java frames walked from the stub's caller.
//
// Frame kinds: ASGCT marks a native method (lineno -3, kJavaNative) but not whether a frame ran
// interpreted, compiled or inlined; VmStackWalker::AssignKinds reads that from the VM along the
// same stack. Frames it cannot type fall back to what CompiledMethodLoad said (NoteCompiled): a
// method never compiled is Interpreted, any other JIT compiled.
//
// Thread safety: Walk is async-signal-safe (no allocation, locks or lazy TLS; VmStackWalker
// guards its reads; the compiled set is a fixed lock-free table). NoteCompiled may be called from
// any thread.
#ifndef CTXPROF_JNI_JAVA_STACK_WALKER_H_
#define CTXPROF_JNI_JAVA_STACK_WALKER_H_

#include <jni.h>

#include <string>

#include "jni/vm_stack_walker.h"
#include "profiler/base/status.h"
#include "profiler/sampler/sample.h"

namespace ctxprof {

class JavaStackWalker {
 public:
  // Finds AsyncGetCallTrace. Fails (kUnavailable) when the JVM does not export it.
  static Status Init();
  // Stores (or, with nullptr, forgets) the calling thread's JNIEnv for the handler.
  static void SetCurrentThreadEnv(JNIEnv* env);
  static JNIEnv* CurrentThreadEnv();
  // Records that `method` has compiled code (CompiledMethodLoad, including inlined methods).
  static void NoteCompiled(jmethodID method);
  // The kind Walk gives a frame of Java method `method`: kJavaJit once it has compiled code,
  // kJavaInterpreted before (for stacks taken with JVMTI, which does not say either).
  static FrameKind KindOf(jmethodID method);
  // A JavaStackWalk: see profiler/sampler/signal_handler.h.
  static int Walk(void* ucontext, RawFrame* frames, int max_depth);
  // With CTXPROF_CHECK_JAVA_WALK=1 in the environment when Init ran (for tests), every walk is
  // ASGCT's, and VmStackWalker::Walk runs beside it from the same context: the report counts
  // the stacks where it agreed frame for frame (id, bci, kind), went on past ASGCT's same frames
  // (extended), walked where ASGCT could not, differed or declined, and describes the first
  // differences. "" without the variable.
  static std::string CheckReport();
  // True when that check mode is on.
  static bool Checking();

 private:
  // Walk's Java frames, without the stub that may lead them; `leaf` is the interrupted pc's blob.
  static int WalkJava(void* ucontext, const VmStackWalker::CodeAt& leaf, RawFrame* frames,
                      int max_depth);
};

}  // namespace ctxprof

#endif  // CTXPROF_JNI_JAVA_STACK_WALKER_H_
