#include "jni/jvm_threads.h"

#include <mutex>
#include <unordered_map>

#include "context/context_map.h"

namespace ctxprof {
namespace {

struct JavaThread {
  std::string name;
  int64_t id;
  jweak thread;  // the java.lang.Thread, weakly (null when it could not be made)
};

std::mutex g_mutex;
std::unordered_map<pid_t, JavaThread>* g_threads = new std::unordered_map<pid_t, JavaThread>();

}  // namespace

void JvmThreads::RecordCurrent(jvmtiEnv* jvmti, JNIEnv* jni, jthread thread) {
  jvmtiThreadInfo info{};
  if (thread == nullptr || jvmti->GetThreadInfo(thread, &info) != JVMTI_ERROR_NONE) return;
  JavaThread entry{info.name != nullptr ? info.name : "", 0, nullptr};
  jvmti->Deallocate(reinterpret_cast<unsigned char*>(info.name));
  if (info.thread_group != nullptr) jni->DeleteLocalRef(info.thread_group);
  if (info.context_class_loader != nullptr) jni->DeleteLocalRef(info.context_class_loader);
  jclass thread_class = jni->GetObjectClass(thread);
  jmethodID get_id =
      thread_class != nullptr ? jni->GetMethodID(thread_class, "getId", "()J") : nullptr;
  if (get_id != nullptr) entry.id = jni->CallLongMethod(thread, get_id);
  if (jni->ExceptionCheck()) {
    jni->ExceptionClear();
    entry.id = 0;
  }
  if (thread_class != nullptr) jni->DeleteLocalRef(thread_class);
  entry.thread = jni->NewWeakGlobalRef(thread);
  jni->ExceptionClear();  // out of memory: the thread is still named
  std::lock_guard<std::mutex> lock(g_mutex);
  JavaThread& slot = (*g_threads)[CachedTid()];
  if (slot.thread != nullptr) jni->DeleteWeakGlobalRef(slot.thread);
  slot = std::move(entry);
}

jobject JvmThreads::ThreadOf(JNIEnv* env, pid_t tid) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const auto found = g_threads->find(tid);
  if (found == g_threads->end() || found->second.thread == nullptr) return nullptr;
  return env->NewLocalRef(found->second.thread);  // null once the thread was collected
}

bool JvmThreads::Lookup(pid_t tid, std::string* name, int64_t* java_thread_id) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const auto found = g_threads->find(tid);
  if (found == g_threads->end()) return false;
  *name = found->second.name;
  *java_thread_id = found->second.id;
  return true;
}

}  // namespace ctxprof
