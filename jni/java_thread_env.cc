#include "jni/java_thread_env.h"

#include <limits.h>
#include <pthread.h>

#include <atomic>
#include <cstdint>

#include "jni/vm_structs.h"
#include "profiler/sampler/fault_guard.h"

namespace ctxprof {
namespace {

// Written by Resolve before g_key is published (release); read by Current after it (acquire).
uintptr_t g_env_offset = 0;
const void* g_functions = nullptr;
std::atomic<int> g_key{-1};

}  // namespace

Status JavaThreadEnv::Resolve(JNIEnv* jni) {
  if (g_key.load(std::memory_order_acquire) >= 0) return Status();
  StatusOr<VmStructs> opened = VmStructs::Open(jni);
  if (!opened.ok()) return opened.status();
  const VmStructs& tables = opened.value();
  const uint64_t thread_size = tables.TypeSize("Thread");
  const uint64_t java_thread_size = tables.TypeSize("JavaThread");
  if (thread_size == 0 || java_thread_size <= thread_size) {
    return Status::Unavailable("the JVM's type table lacks Thread or JavaThread (sizes " +
                                   std::to_string(thread_size) + ", " +
                                   std::to_string(java_thread_size) + ")",
                               0);
  }
  const auto env = reinterpret_cast<uintptr_t>(jni);
  int key = -1;
  int matches = 0;
  uintptr_t offset = 0;
  for (int candidate = 0; candidate < PTHREAD_KEYS_MAX; candidate++) {
    const auto value =
        reinterpret_cast<uintptr_t>(pthread_getspecific(static_cast<pthread_key_t>(candidate)));
    if (value == 0 || value > env) continue;
    const uintptr_t distance = env - value;
    if (distance < thread_size || distance + sizeof(JNIEnv) > java_thread_size) continue;
    key = candidate;
    offset = distance;
    matches++;
  }
  if (matches != 1) {
    return Status::Unavailable(
        "found " + std::to_string(matches) +
            " thread-local keys pointing at the JavaThread that holds this thread's JNIEnv "
            "(want exactly 1; JavaThread is " +
            std::to_string(java_thread_size) + " bytes)",
        0);
  }
  g_env_offset = offset;
  g_functions = jni->functions;
  g_key.store(key, std::memory_order_release);
  return Status();
}

JNIEnv* JavaThreadEnv::Current() {
  const int key = g_key.load(std::memory_order_acquire);
  if (key < 0) return nullptr;
  auto* thread = static_cast<char*>(pthread_getspecific(static_cast<pthread_key_t>(key)));
  if (thread == nullptr) return nullptr;
  char* env = thread + g_env_offset;
  const void* functions = nullptr;
  if (!FaultGuard::SafeRead(env, &functions, sizeof(functions)) || functions != g_functions) {
    return nullptr;
  }
  return reinterpret_cast<JNIEnv*>(env);
}

const char* JavaThreadEnv::ThreadOf(JNIEnv* env) {
  if (env == nullptr || g_key.load(std::memory_order_acquire) < 0) return nullptr;
  return reinterpret_cast<const char*>(env) - g_env_offset;
}

}  // namespace ctxprof
