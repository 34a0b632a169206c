#include "jni/jvm_resolvers.h"

#include <cstdio>

#include "jni/jfr_sync.h"
#include "jni/jvm_stubs.h"
#include "jni/jvm_threads.h"
#include "jni/virtual_threads.h"

namespace ctxprof {
namespace {

JfrFrameType TypeOf(FrameKind kind) {
  switch (kind) {
    case FrameKind::kJavaInterpreted:
      return JfrFrameType::kInterpreted;
    case FrameKind::kJavaJit:
      return JfrFrameType::kJitCompiled;
    case FrameKind::kJavaInlined:
      return JfrFrameType::kInlined;
    case FrameKind::kJavaNative:
      // async-profiler types a Java native method by how it was entered (interpreted or JIT);
      // AsyncGetCallTrace does not tell, so: JIT compiled. Typed Native (3) it would lose its
      // class in async-profiler's converter, which names the Native frames of a recording that
      // has a Kernel frame type (ours) by method alone: "poll" for "sun.nio.ch.Net.poll".
      return JfrFrameType::kJitCompiled;
    case FrameKind::kKernel:  // named and typed by NativeFrameResolver
    case FrameKind::kNative:
    case FrameKind::kJavaUnwalkable:
      break;
  }
  return JfrFrameType::kNative;
}

// Takes ownership of a JVMTI-allocated string.
std::string Take(jvmtiEnv* jvmti, char* text) {
  if (text == nullptr) return std::string();
  std::string copy(text);
  jvmti->Deallocate(reinterpret_cast<unsigned char*>(text));
  return copy;
}

}  // namespace

std::string_view InternalClassName(std::string_view signature) {
  if (signature.size() >= 2 && signature.front() == 'L' && signature.back() == ';') {
    return signature.substr(1, signature.size() - 2);
  }
  return signature;
}

void JvmFrameResolver::Resolve(const RawFrame& frame, ResolvedFrame* out) {
  if (frame.kind == FrameKind::kNative && JvmStubs::Lookup(frame.id, &out->method_name)) {
    out->class_name = "[stub]";
    out->descriptor = "()L;";  // as NativeFrameResolver's
    out->type = JfrFrameType::kNative;
    return;
  }
  if (frame.kind == FrameKind::kNative || frame.kind == FrameKind::kKernel) {
    native_.Resolve(frame, out);
    return;
  }
  if (frame.kind == FrameKind::kJavaUnwalkable) {
    // Named like async-profiler's markers, so the reason shows as the whole stack.
    out->class_name = "[jvm]";
    out->method_name = frame.id == 5   ? "[unknown_Java]"
                       : frame.id == 6 ? "[not_walkable_Java]"
                       : frame.id == 9 ? "[deoptimization]"
                                       : "[unwalkable_Java]";
    out->descriptor = "()V";
    out->type = JfrFrameType::kNative;
    return;
  }
  out->type = TypeOf(frame.kind);
  const auto method = reinterpret_cast<jmethodID>(frame.id);
  char* name = nullptr;
  char* descriptor = nullptr;
  jclass holder = nullptr;
  char* class_signature = nullptr;
  if (method == nullptr || jvmti_->GetMethodName(method, &name, &descriptor, nullptr) != 0 ||
      jvmti_->GetMethodDeclaringClass(method, &holder) != 0 ||
      jvmti_->GetClassSignature(holder, &class_signature, nullptr) != 0) {
    ReleaseLocal(holder);
    Take(jvmti_, name);
    Take(jvmti_, descriptor);
    char placeholder[48];
    snprintf(placeholder, sizeof(placeholder), "jmethodID 0x%llx",
             static_cast<unsigned long long>(frame.id));
    out->class_name = "[unknown]";
    out->method_name = placeholder;
    out->descriptor = "()V";
    return;
  }
  out->method_name = Take(jvmti_, name);
  out->descriptor = Take(jvmti_, descriptor);
  out->class_name = InternalClassName(Take(jvmti_, class_signature));
  ReleaseLocal(holder);
  out->line_number = LineOf(method, frame.bci);
}

void JvmFrameResolver::ReleaseLocal(jobject object) {
  JNIEnv* jni = nullptr;
  if (object != nullptr && vm_->GetEnv(reinterpret_cast<void**>(&jni), JNI_VERSION_1_6) == JNI_OK) {
    jni->DeleteLocalRef(object);
  }
}

int32_t JvmFrameResolver::LineOf(jmethodID method, int32_t bci) {
  if (bci < 0) return -1;
  jint count = 0;
  jvmtiLineNumberEntry* table = nullptr;
  if (jvmti_->GetLineNumberTable(method, &count, &table) != JVMTI_ERROR_NONE) return -1;
  int32_t line = -1;
  jlocation best = -1;
  for (jint i = 0; i < count; i++) {
    if (table[i].start_location <= bci && table[i].start_location > best) {
      best = table[i].start_location;
      line = table[i].line_number;
    }
  }
  jvmti_->Deallocate(reinterpret_cast<unsigned char*>(table));
  return line;
}

void JvmThreadResolver::Resolve(int32_t tid, ResolvedThread* out) {
  if (!JvmThreads::Lookup(tid, &out->name, &out->java_thread_id)) {
    native_.Resolve(tid, out);
  } else if (JfrSync::Running()) {
    JNIEnv* env = nullptr;
    if (vm_->GetEnv(reinterpret_cast<void**>(&env), JNI_VERSION_1_6) != JNI_OK) return;
    jobject thread = JvmThreads::ThreadOf(env, tid);
    if (thread == nullptr) return;
    out->jdk_key = JfrSync::JdkThreadKey(env, thread);
    env->DeleteLocalRef(thread);
  }
}

std::string JvmThreadResolver::VirtualThreadName(uint64_t id) { return VirtualThreads::NameOf(id); }

bool JvmThreadResolver::JdkKeysVirtualThreadsById() { return JfrSync::Running(); }

}  // namespace ctxprof
