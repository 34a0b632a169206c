#include "jni/virtual_threads.h"

#include <atomic>
#include <cstdarg>
#include <cstring>
#include <mutex>
#include <new>
#include <unordered_map>

#include "context/context_block.h"
#include "context/thread_context.h"

// Every callback here runs on the carrier thread, so ThreadContext (the calling thread's
// context) is the carrier's block: the one its samples read while the virtual thread is mounted.
namespace ctxprof {
namespace {

__thread uint64_t t_mounted __attribute__((tls_model("initial-exec"))) = 0;

// java.lang.Thread's `tid` and `name` fields, looked up by the first callback (the JNIEnv that
// needs comes with the callbacks). A race between carriers stores the same ids.
std::atomic<jfieldID> g_tid_field{nullptr};
std::atomic<jfieldID> g_name_field{nullptr};

std::mutex g_names_mutex;
auto* g_names = new std::unordered_map<uint64_t, std::string>();  // guarded by g_names_mutex

bool ResolveFields(JNIEnv* jni) {
  if (g_tid_field.load(std::memory_order_acquire) != nullptr) return true;
  jclass thread_class = jni->FindClass("java/lang/Thread");
  if (thread_class == nullptr) {
    jni->ExceptionClear();
    return false;
  }
  jfieldID tid = jni->GetFieldID(thread_class, "tid", "J");
  jfieldID name =
      tid != nullptr ? jni->GetFieldID(thread_class, "name", "Ljava/lang/String;") : nullptr;
  jni->DeleteLocalRef(thread_class);
  if (tid == nullptr || name == nullptr) {
    jni->ExceptionClear();
    return false;
  }
  g_name_field.store(name, std::memory_order_relaxed);
  g_tid_field.store(tid, std::memory_order_release);
  return true;
}

// The virtual thread's java.lang.Thread id, 0 when it cannot be read.
uint64_t IdOf(JNIEnv* jni, jthread thread) {
  if (jni == nullptr || thread == nullptr || !ResolveFields(jni)) return 0;
  return static_cast<uint64_t>(
      jni->GetLongField(thread, g_tid_field.load(std::memory_order_acquire)));
}

// Remembers the name of a virtual thread that has one.
void RecordName(JNIEnv* jni, jthread thread, uint64_t id) {
  if (id == 0) return;
  auto name = static_cast<jstring>(
      jni->GetObjectField(thread, g_name_field.load(std::memory_order_relaxed)));
  if (name == nullptr) return;
  if (jni->GetStringLength(name) > 0) {
    const char* chars = jni->GetStringUTFChars(name, nullptr);
    if (chars != nullptr) {
      std::lock_guard<std::mutex> lock(g_names_mutex);
      (*g_names)[id] = chars;
    }
    if (chars != nullptr) jni->ReleaseStringUTFChars(name, chars);
  }
  jni->DeleteLocalRef(name);
}

// The extension events' parameters after the jvmtiEnv: (JNIEnv*, jthread virtual thread).
void MountArguments(va_list arguments, JNIEnv** jni, jthread* thread) {
  *jni = va_arg(arguments, JNIEnv*);
  *thread = va_arg(arguments, jthread);
}

// The saved context of the current (virtual) thread; created when `create`.
ThreadContext::SuspendedContext* SnapshotOf(jvmtiEnv* jvmti, bool create) {
  void* data = nullptr;
  if (jvmti->GetThreadLocalStorage(nullptr, &data) != JVMTI_ERROR_NONE) return nullptr;
  if (data == nullptr && create) {
    auto* snapshot = new (std::nothrow) ThreadContext::SuspendedContext();
    if (snapshot == nullptr) return nullptr;
    if (jvmti->SetThreadLocalStorage(nullptr, snapshot) != JVMTI_ERROR_NONE) {
      delete snapshot;
      return nullptr;
    }
    data = snapshot;
  }
  return static_cast<ThreadContext::SuspendedContext*>(data);
}

void JNICALL OnMount(jvmtiEnv* jvmti, ...) {
  va_list arguments;
  va_start(arguments, jvmti);
  JNIEnv* jni;
  jthread thread;
  MountArguments(arguments, &jni, &thread);
  va_end(arguments);
  t_mounted = IdOf(jni, thread);
  const ThreadContext::SuspendedContext* saved = SnapshotOf(jvmti, /*create=*/false);
  ThreadContext::Mount(t_mounted, saved != nullptr ? *saved : ThreadContext::SuspendedContext{});
}

void JNICALL OnUnmount(jvmtiEnv* jvmti, ...) {
  // Without memory to save it in, the context is lost and its interval ends here.
  ThreadContext::Unmount(SnapshotOf(jvmti, /*create=*/true));
  t_mounted = 0;
}

Status EnableExtension(jvmtiEnv* jvmti, const char* id, jvmtiExtensionEvent callback) {
  jint count = 0;
  jvmtiExtensionEventInfo* events = nullptr;
  if (jvmti->GetExtensionEvents(&count, &events) != JVMTI_ERROR_NONE) {
    return Status::Unavailable("GetExtensionEvents failed", 0);
  }
  jint index = -1;
  for (jint i = 0; i < count; i++) {
    if (strcmp(events[i].id, id) == 0) index = events[i].extension_event_index;
    jvmti->Deallocate(reinterpret_cast<unsigned char*>(events[i].id));
    jvmti->Deallocate(reinterpret_cast<unsigned char*>(events[i].short_description));
    for (jint p = 0; p < events[i].param_count; p++) {
      jvmti->Deallocate(reinterpret_cast<unsigned char*>(events[i].params[p].name));
    }
    jvmti->Deallocate(reinterpret_cast<unsigned char*>(events[i].params));
  }
  jvmti->Deallocate(reinterpret_cast<unsigned char*>(events));
  if (index < 0) return Status::Unavailable(std::string("the JVM has no extension event ") + id, 0);
  // HotSpot posts an extension event only when it has a callback and is enabled.
  if (jvmti->SetExtensionEventCallback(index, callback) != JVMTI_ERROR_NONE ||
      jvmti->SetEventNotificationMode(JVMTI_ENABLE, static_cast<jvmtiEvent>(index), nullptr) !=
          JVMTI_ERROR_NONE) {
    return Status::Unavailable(std::string("cannot enable the extension event ") + id, 0);
  }
  return Status();
}

}  // namespace

Status VirtualThreads::Enable(jvmtiEnv* jvmti) {
  // JVMTI_EVENT_VIRTUAL_THREAD_START/END (JDK 21+; not in the JDK 17 headers we build with).
  constexpr auto kVirtualThreadStart = static_cast<jvmtiEvent>(87);
  constexpr auto kVirtualThreadEnd = static_cast<jvmtiEvent>(88);
  Status enabled = EnableExtension(jvmti, "com.sun.hotspot.events.VirtualThreadMount", OnMount);
  if (enabled.ok()) {
    enabled = EnableExtension(jvmti, "com.sun.hotspot.events.VirtualThreadUnmount", OnUnmount);
  }
  if (!enabled.ok()) return enabled;
  for (jvmtiEvent event : {kVirtualThreadStart, kVirtualThreadEnd}) {
    if (jvmti->SetEventNotificationMode(JVMTI_ENABLE, event, nullptr) != JVMTI_ERROR_NONE) {
      return Status::Unavailable("cannot enable VirtualThreadStart/VirtualThreadEnd", 0);
    }
  }
  return Status();
}

void JNICALL VirtualThreads::OnStart(jvmtiEnv*, JNIEnv* jni, jthread thread) {
  t_mounted = IdOf(jni, thread);
  ThreadContext::Mount(t_mounted, ThreadContext::SuspendedContext{});
  RecordName(jni, thread, t_mounted);
}

void JNICALL VirtualThreads::OnEnd(jvmtiEnv* jvmti, JNIEnv*, jthread) {
  ThreadContext::Unmount(nullptr);
  if (t_mounted != 0) {
    std::lock_guard<std::mutex> lock(g_names_mutex);
    g_names->erase(t_mounted);
  }
  t_mounted = 0;
  ThreadContext::SuspendedContext* snapshot = SnapshotOf(jvmti, /*create=*/false);
  if (snapshot == nullptr) return;
  jvmti->SetThreadLocalStorage(nullptr, nullptr);
  delete snapshot;
}

uint64_t VirtualThreads::Mounted() { return t_mounted; }

std::string VirtualThreads::NameOf(uint64_t id) {
  std::lock_guard<std::mutex> lock(g_names_mutex);
  const auto found = g_names->find(id);
  return found != g_names->end() ? found->second : "";
}

}  // namespace ctxprof
