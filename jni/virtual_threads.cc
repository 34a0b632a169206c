#include "jni/virtual_threads.h"

#include <cstdarg>
#include <cstring>
#include <new>

#include "context/context_block.h"
#include "context/thread_context.h"

// Every callback here runs on the carrier thread, so ThreadContext (the calling thread's
// context) is the carrier's block: the one its samples read while the virtual thread is mounted.
namespace ctxprof {
namespace {

// The snapshot of the current (virtual) thread; created when `create`.
ContextSnapshot* SnapshotOf(jvmtiEnv* jvmti, bool create) {
  void* data = nullptr;
  if (jvmti->GetThreadLocalStorage(nullptr, &data) != JVMTI_ERROR_NONE) return nullptr;
  if (data == nullptr && create) {
    auto* snapshot = new (std::nothrow) ContextSnapshot();
    if (snapshot == nullptr) return nullptr;
    if (jvmti->SetThreadLocalStorage(nullptr, snapshot) != JVMTI_ERROR_NONE) {
      delete snapshot;
      return nullptr;
    }
    data = snapshot;
  }
  return static_cast<ContextSnapshot*>(data);
}

void JNICALL OnMount(jvmtiEnv* jvmti, ...) {
  const ContextSnapshot* snapshot = SnapshotOf(jvmti, /*create=*/false);
  if (snapshot != nullptr) {
    ThreadContext::SetAll(*snapshot);
  } else {
    ThreadContext::Clear();
  }
}

void JNICALL OnUnmount(jvmtiEnv* jvmti, ...) {
  ContextSnapshot* snapshot = SnapshotOf(jvmti, /*create=*/true);
  if (snapshot != nullptr) ThreadContext::Read(snapshot);
  ThreadContext::Clear();
}

bool EnableExtension(jvmtiEnv* jvmti, const char* id, jvmtiExtensionEvent callback,
                     std::string* error) {
  jint count = 0;
  jvmtiExtensionEventInfo* events = nullptr;
  if (jvmti->GetExtensionEvents(&count, &events) != JVMTI_ERROR_NONE) {
    *error = "GetExtensionEvents failed";
    return false;
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
  if (index < 0) {
    *error = std::string("the JVM has no extension event ") + id;
    return false;
  }
  // HotSpot posts an extension event only when it has a callback and is enabled.
  if (jvmti->SetExtensionEventCallback(index, callback) != JVMTI_ERROR_NONE ||
      jvmti->SetEventNotificationMode(JVMTI_ENABLE, static_cast<jvmtiEvent>(index), nullptr) !=
          JVMTI_ERROR_NONE) {
    *error = std::string("cannot enable the extension event ") + id;
    return false;
  }
  return true;
}

}  // namespace

bool VirtualThreads::Enable(jvmtiEnv* jvmti, std::string* error) {
  // JVMTI_EVENT_VIRTUAL_THREAD_START/END (JDK 21+; not in the JDK 17 headers we build with).
  constexpr auto kVirtualThreadStart = static_cast<jvmtiEvent>(87);
  constexpr auto kVirtualThreadEnd = static_cast<jvmtiEvent>(88);
  if (!EnableExtension(jvmti, "com.sun.hotspot.events.VirtualThreadMount", OnMount, error) ||
      !EnableExtension(jvmti, "com.sun.hotspot.events.VirtualThreadUnmount", OnUnmount, error)) {
    return false;
  }
  for (jvmtiEvent event : {kVirtualThreadStart, kVirtualThreadEnd}) {
    if (jvmti->SetEventNotificationMode(JVMTI_ENABLE, event, nullptr) != JVMTI_ERROR_NONE) {
      *error = "cannot enable VirtualThreadStart/VirtualThreadEnd";
      return false;
    }
  }
  return true;
}

void JNICALL VirtualThreads::OnStart(jvmtiEnv*, JNIEnv*, jthread) { ThreadContext::Clear(); }

void JNICALL VirtualThreads::OnEnd(jvmtiEnv* jvmti, JNIEnv*, jthread) {
  ThreadContext::Clear();
  ContextSnapshot* snapshot = SnapshotOf(jvmti, /*create=*/false);
  if (snapshot == nullptr) return;
  jvmti->SetThreadLocalStorage(nullptr, nullptr);
  delete snapshot;
}

}  // namespace ctxprof
