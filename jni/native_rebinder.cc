#include "jni/native_rebinder.h"

#include <cstring>
#include <mutex>
#include <vector>

namespace ctxprof {
namespace {

constexpr const char* kHelperClass = "io/ctxprof/boot/NativeRebinder";
constexpr const char* kHelperMethod = "rebind";

using RegisterNativesFunction = jint(JNICALL*)(JNIEnv*, jclass, const JNINativeMethod*, jint);

// What the calling thread is re-registering; set only under g_mutex, read by the interceptor on
// that thread (t_rebinding).
struct Rebind {
  const char* class_name;
  const char* method;
  const char* signature;
  void* replacement;
  std::atomic<void*>* original;
  bool found;
};

std::mutex g_mutex;
Rebind* g_rebind = nullptr;                                     // guarded by g_mutex
std::atomic<RegisterNativesFunction> g_real_register{nullptr};  // the JVM's RegisterNatives
jclass g_helper = nullptr;                                      // global ref; guarded by g_mutex
__thread bool t_rebinding __attribute__((tls_model("initial-exec"))) = false;

jint JNICALL InterceptRegisterNatives(JNIEnv* env, jclass klass, const JNINativeMethod* methods,
                                      jint count) {
  const RegisterNativesFunction real = g_real_register.load(std::memory_order_acquire);
  if (!t_rebinding || count <= 0) return real(env, klass, methods, count);
  Rebind* rebind = g_rebind;
  std::vector<JNINativeMethod> copy(methods, methods + count);
  for (JNINativeMethod& entry : copy) {
    if (strcmp(entry.name, rebind->method) == 0 &&
        strcmp(entry.signature, rebind->signature) == 0) {
      // Bound to us already (a second call): keep the JVM's entry, never our own.
      if (entry.fnPtr != rebind->replacement) {
        rebind->original->store(entry.fnPtr, std::memory_order_release);
      }
      entry.fnPtr = rebind->replacement;
      rebind->found = true;
    }
  }
  return real(env, klass, copy.data(), count);
}

// The helper's native method: runs the target class's registration with the helper (a boot
// class) as the caller HotSpot checks.
void JNICALL RunRegisterNatives(JNIEnv* env, jclass) {
  jclass target = env->FindClass(g_rebind->class_name);
  if (target == nullptr) return;  // NoClassDefFoundError pending
  jmethodID registration = env->GetStaticMethodID(target, "registerNatives", "()V");
  if (registration != nullptr) env->CallStaticVoidMethod(target, registration);
  env->DeleteLocalRef(target);
}

void PutU2(std::string* out, size_t value) {
  out->push_back(static_cast<char>((value >> 8) & 0xFF));
  out->push_back(static_cast<char>(value & 0xFF));
}

void PutUtf8(std::string* out, const std::string& text) {
  out->push_back(1);  // CONSTANT_Utf8 (our names are ASCII: modified UTF-8 = the bytes)
  PutU2(out, text.size());
  *out += text;
}

// The pending exception's class, for an error message; clears it.
std::string TakeException(JNIEnv* jni) {
  jthrowable thrown = jni->ExceptionOccurred();
  if (thrown == nullptr) return "no exception";
  jni->ExceptionClear();
  std::string name = "an exception";
  jclass klass = jni->GetObjectClass(thrown);
  jclass class_class = jni->FindClass("java/lang/Class");
  jmethodID get_name = class_class != nullptr
                           ? jni->GetMethodID(class_class, "getName", "()Ljava/lang/String;")
                           : nullptr;
  auto text =
      get_name != nullptr ? static_cast<jstring>(jni->CallObjectMethod(klass, get_name)) : nullptr;
  if (text != nullptr) {
    const char* chars = jni->GetStringUTFChars(text, nullptr);
    if (chars != nullptr) name = chars;
    jni->ReleaseStringUTFChars(text, chars);
  }
  jni->ExceptionClear();
  return name;
}

// Defines the helper class in the boot loader and binds its method, once per process.
Status DefineHelper(JNIEnv* jni) {
  if (g_helper != nullptr) return Status();
  const std::string bytes = NativeMethodClassFile(kHelperClass, kHelperMethod, "()V");
  jclass helper =
      jni->DefineClass(kHelperClass, nullptr, reinterpret_cast<const jbyte*>(bytes.data()),
                       static_cast<jsize>(bytes.size()));
  if (helper == nullptr) {
    return Status::Unavailable("defining the boot helper class " + std::string(kHelperClass) +
                                   " failed (" + TakeException(jni) + ")",
                               0);
  }
  JNINativeMethod method{const_cast<char*>(kHelperMethod), const_cast<char*>("()V"),
                         reinterpret_cast<void*>(RunRegisterNatives)};
  if (jni->RegisterNatives(helper, &method, 1) != JNI_OK) {
    return Status::Unavailable(
        "binding the boot helper's native method failed (" + TakeException(jni) + ")", 0);
  }
  g_helper = static_cast<jclass>(jni->NewGlobalRef(helper));
  jni->DeleteLocalRef(helper);
  if (g_helper == nullptr) {
    return Status::Unavailable("keeping the boot helper class failed (out of memory)", 0);
  }
  return Status();
}

// Runs the helper with RegisterNatives intercepted.
Status RunIntercepted(jvmtiEnv* jvmti, JNIEnv* jni) {
  jniNativeInterface* table = nullptr;
  if (jvmti->GetJNIFunctionTable(&table) != JVMTI_ERROR_NONE) {
    return Status::Unavailable("JVMTI GetJNIFunctionTable failed", 0);
  }
  Status status;
  g_real_register.store(table->RegisterNatives, std::memory_order_release);
  table->RegisterNatives = InterceptRegisterNatives;
  if (jvmti->SetJNIFunctionTable(table) == JVMTI_ERROR_NONE) {
    t_rebinding = true;
    jmethodID run = jni->GetStaticMethodID(g_helper, kHelperMethod, "()V");
    if (run != nullptr) jni->CallStaticVoidMethod(g_helper, run);
    t_rebinding = false;
    table->RegisterNatives = g_real_register.load(std::memory_order_relaxed);
    if (jvmti->SetJNIFunctionTable(table) != JVMTI_ERROR_NONE) {
      // The interceptor stays in the table; it forwards every call unchanged.
      status = Status::Unavailable(
          "JVMTI SetJNIFunctionTable failed restoring the JNI function table", 0);
    }
    if (jni->ExceptionCheck()) {
      status = Status::Unavailable(std::string("running ") + g_rebind->class_name +
                                       ".registerNatives() failed (" + TakeException(jni) + ")",
                                   0);
    }
  } else {
    status = Status::Unavailable("JVMTI SetJNIFunctionTable failed", 0);
  }
  jvmti->Deallocate(reinterpret_cast<unsigned char*>(table));
  return status;
}

}  // namespace

std::string NativeMethodClassFile(const std::string& class_name, const std::string& method,
                                  const std::string& descriptor) {
  std::string out("\xCA\xFE\xBA\xBE", 4);
  PutU2(&out, 0);             // minor version
  PutU2(&out, 52);            // major version: Java 8 (no stack maps needed; there is no code)
  PutU2(&out, 7);             // constant pool count: entries 1..6
  PutUtf8(&out, class_name);  // #1
  out.push_back(7);           // #2 CONSTANT_Class -> #1
  PutU2(&out, 1);
  PutUtf8(&out, "java/lang/Object");  // #3
  out.push_back(7);                   // #4 CONSTANT_Class -> #3
  PutU2(&out, 3);
  PutUtf8(&out, method);      // #5
  PutUtf8(&out, descriptor);  // #6
  PutU2(&out, 0x0031);        // ACC_PUBLIC | ACC_FINAL | ACC_SUPER
  PutU2(&out, 2);             // this class
  PutU2(&out, 4);             // super class
  PutU2(&out, 0);             // interfaces
  PutU2(&out, 0);             // fields
  PutU2(&out, 1);             // methods
  PutU2(&out, 0x0109);        // ACC_PUBLIC | ACC_STATIC | ACC_NATIVE
  PutU2(&out, 5);             // name
  PutU2(&out, 6);             // descriptor
  PutU2(&out, 0);             // method attributes
  PutU2(&out, 0);             // class attributes
  return out;
}

Status RebindJdkNative(jvmtiEnv* jvmti, JNIEnv* jni, const char* class_name, const char* method,
                       const char* signature, void* replacement, std::atomic<void*>* original) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const Status defined = DefineHelper(jni);
  if (!defined.ok()) return defined;
  Rebind rebind{class_name, method, signature, replacement, original, false};
  g_rebind = &rebind;
  const Status ran = RunIntercepted(jvmti, jni);
  g_rebind = nullptr;
  if (!ran.ok()) return ran;
  if (!rebind.found) {
    return Status::Unavailable(
        std::string(class_name) + ".registerNatives() did not register " + method + signature, 0);
  }
  return Status();
}

}  // namespace ctxprof
