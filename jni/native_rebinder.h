// RebindJdkNative: binds a native method of a JDK class to a function of ours and hands back the
// JVM's own entry, so the replacement can wrap it (jni/jvm_events.cc times Unsafe.park this way)
// without HotSpot logging a re-registration. Why plain RegisterNatives and JVMTI NativeMethodBind
// do not do: docs/JAVA.md ("Allocation and lock events").
//
// How (the scheme async-profiler uses, written here from its description):
//  1. A tiny class `io/ctxprof/boot/NativeRebinder` with one static native method is defined in
//     the boot loader (JNI DefineClass with a null loader; class bytes built below) and its
//     method bound to our function, which calls the JDK class's static `registerNatives()`.
//  2. JNI's RegisterNatives is swapped in the JNI function table (JVMTI Get/SetJNIFunctionTable)
//     for an interceptor; the helper is called; the JDK class's registration reaches the
//     interceptor, which stores the target method's current entry and forwards the same method
//     table with only that entry replaced by ours. Every other method is bound again to the
//     address it has, which HotSpot ignores. The RegisterNatives caller is then a boot-loader
//     class (our helper), so HotSpot logs nothing.
//  3. The original function table is put back.
// While the table is swapped, other threads' RegisterNatives calls pass through the interceptor
// unchanged (it acts only on the calling thread's own re-registration).
//
// Limits: only classes whose natives are registered by a static `registerNatives()V` method
// (jdk.internal.misc.Unsafe); the binding stays until the JVM exits (unbinding would need the
// same dance and a hook must stay callable by threads already inside it).
//
// Thread safety: calls are serialised internally; `jni` must be the calling thread's JNIEnv, in
// the live phase. Two safepoints (SetJNIFunctionTable) per call.
#ifndef CTXPROF_JNI_NATIVE_REBINDER_H_
#define CTXPROF_JNI_NATIVE_REBINDER_H_

#include <jni.h>
#include <jvmti.h>

#include <atomic>
#include <string>

#include "profiler/base/status.h"

namespace ctxprof {

// Binds `class_name`.`method` (JVM signature `signature`) to `replacement`. The JVM's previous
// entry is stored into *original (release) before the new binding can be used, so a replacement
// that loads it with acquire always finds it. Fails (kUnavailable naming the step) with nothing
// left changed.
Status RebindJdkNative(jvmtiEnv* jvmti, JNIEnv* jni, const char* class_name, const char* method,
                       const char* signature, void* replacement, std::atomic<void*>* original);

// The bytes of a class file (version 52) declaring `public final class <class_name>` with one
// `public static native` method: `method` of `descriptor`, and nothing else.
std::string NativeMethodClassFile(const std::string& class_name, const std::string& method,
                                  const std::string& descriptor);

}  // namespace ctxprof

#endif  // CTXPROF_JNI_NATIVE_REBINDER_H_
