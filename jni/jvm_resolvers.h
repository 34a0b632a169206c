// JVM resolvers for the JFR writer (profiler/jfr_events/frame_resolver.h).
//
// JvmFrameResolver names Java frames through JVMTI: the jmethodID's declaring class in internal
// form ("java/lang/String"), method name and descriptor, and the line of the bci from the
// method's line number table. A jmethodID that is null or no longer valid (its class was
// unloaded) becomes class "[unknown]", method "jmethodID 0x..." rather than an error; a
// method without a line table gets line -1. A native frame in code the JVM generated is named
// from JvmStubs (class "[stub]", jni/jvm_stubs.h); other native and kernel frames go to
// NativeFrameResolver.
//
// JvmThreadResolver answers from JvmThreads (jni/jvm_threads.h): the Java name and Thread id
// recorded when the thread started (or first called libctxprof); other threads (VM threads,
// native threads, Java threads that started before the library was loaded and never called it)
// fall back to NativeThreadResolver's OS name.
//
// Thread safety: like every resolver, used only from the JFR writer's thread, which must be
// attached to the VM (Profiler's background hooks do that); JVMTI calls made from an unattached
// thread fail and produce the placeholders above.
#ifndef CTXPROF_JNI_JVM_RESOLVERS_H_
#define CTXPROF_JNI_JVM_RESOLVERS_H_

#include <jvmti.h>

#include <string_view>

#include "profiler/symbols/native_resolvers.h"

namespace ctxprof {

class JvmFrameResolver : public FrameResolver {
 public:
  // `vm` gives the calling thread's JNIEnv to release the local class references JVMTI returns
  // (the writer thread never returns to Java, so they would otherwise pile up).
  JvmFrameResolver(jvmtiEnv* jvmti, JavaVM* vm) : jvmti_(jvmti), vm_(vm) {}
  void Resolve(const RawFrame& frame, ResolvedFrame* out) override;
  void Preload() override { native_.Preload(); }

 private:
  int32_t LineOf(jmethodID method, int32_t bci);

  void ReleaseLocal(jobject object);

  jvmtiEnv* jvmti_;
  JavaVM* vm_;
  NativeFrameResolver native_;
};

// A class signature as JVMTI gives it ("Ljava/lang/String;") in the internal form JFR writes
// ("java/lang/String"); array and primitive signatures ("[B", "[Ljava/lang/String;") unchanged.
// A view into `signature` (no copy: the allocation callback interns it as it is).
std::string_view InternalClassName(std::string_view signature);

class JvmThreadResolver : public ThreadResolver {
 public:
  explicit JvmThreadResolver(JavaVM* vm) : vm_(vm) {}
  // With jfrsync= also the JDK recorder's key of a Java thread (JfrSync::JdkThreadKey).
  void Resolve(int32_t tid, ResolvedThread* out) override;
  // From VirtualThreads (jni/virtual_threads.h).
  std::string VirtualThreadName(uint64_t id) override;
  bool JdkKeysVirtualThreadsById() override;

 private:
  JavaVM* const vm_;
  NativeThreadResolver native_;
};

}  // namespace ctxprof

#endif  // CTXPROF_JNI_JVM_RESOLVERS_H_
