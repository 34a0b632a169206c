#include "jni/jvm_events.h"

#include <jvmti.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <mutex>

#include "jni/java_stack_walker.h"
#include "jni/java_thread_env.h"
#include "jni/jvm_resolvers.h"
#include "jni/native_rebinder.h"
#include "jni/vm_stack_walker.h"
#include "jni/walk_check.h"

namespace ctxprof {
namespace {

JavaVM* g_vm = nullptr;
jvmtiEnv* g_jvmti = nullptr;        // our own environment; null when Init failed
Status g_init_status;               // why g_jvmti is null (Init runs before any Start)
jfieldID g_thread_id = nullptr;     // java.lang.Thread.tid (null: not found, ids not compared)
jfieldID g_park_blocker = nullptr;  // java.lang.Thread.parkBlocker

// Unsafe.park: the JVM's entry (set by RebindJdkNative before the hook can run) and whether
// waits are timed (a session with lock= runs).
using ParkFunction = void(JNICALL*)(JNIEnv*, jobject, jboolean, jlong);
std::atomic<void*> g_original_park{nullptr};
std::atomic<bool> g_time_parks{false};
std::atomic<bool> g_track_objects{false};  // live option: allocation records get a weak ref
bool g_tag_classes = false;                // the JVM lets us tag classes with their name ids
std::mutex g_park_mutex;                   // serialises the one-time binding
bool g_park_bound = false;                 // guarded by g_park_mutex

// The contended monitor enter in progress on this OS thread: its start and the Java id of the
// thread that waits (a virtual thread may be entered on another carrier).
struct PendingEnter {
  jlong thread_id;
  uint64_t start_ticks;
};
__thread PendingEnter t_enter __attribute__((tls_model("initial-exec"))) = {0, 0};

static_assert(sizeof(jvmtiFrameInfo) == sizeof(RawFrame) &&
                  alignof(jvmtiFrameInfo) <= alignof(RawFrame),
              "JVMTI frames are converted in place into the record's frames");

// Check mode (JvmEvents::CheckReport): every stack is JVMTI's and the VM walk runs beside it.
// JVMTI's kinds are JavaStackWalker::KindOf's guesses, so methods and bcis are compared.
WalkCheck g_walk_check(/*compare_kinds=*/false, /*count_extensions=*/false);

// The current thread's Java frames, leaf first, into `frames` through JVMTI GetStackTrace:
// jvmtiFrameInfo entries written into the same memory and converted in place (same size, index
// for index).
int JvmtiJavaStack(RawFrame* frames, int max_frames) {
  jint count = 0;
  if (g_jvmti->GetStackTrace(nullptr, 0, max_frames, reinterpret_cast<jvmtiFrameInfo*>(frames),
                             &count) != JVMTI_ERROR_NONE) {
    return 0;
  }
  for (jint i = 0; i < count; i++) {
    jvmtiFrameInfo info;
    memcpy(&info, &frames[i], sizeof(info));
    RawFrame& frame = frames[i];
    frame.id = reinterpret_cast<uint64_t>(info.method);
    if (info.location < 0) {  // a native method
      frame.bci = -1;
      frame.kind = FrameKind::kJavaNative;
    } else {
      frame.bci = static_cast<int32_t>(info.location);
      frame.kind = JavaStackWalker::KindOf(info.method);
    }
  }
  return count;
}

// Compares JVMTI's frames of the current thread with the VM walk's (methods and bcis: JVMTI's
// kinds are JavaStackWalker::KindOf's guesses); counts the outcome.
void CheckAgainstVmWalk(const char* thread, const RawFrame* jvmti, int jvmti_count) {
  RawFrame vm[WalkCheck::kDepth];
  const int vm_count = VmStackWalker::WalkStopped(thread, vm, WalkCheck::kDepth);
  if (vm_count == 0) {
    if (jvmti_count > 0) g_walk_check.CountDeclined();
    return;
  }
  g_walk_check.Compare(jvmti, jvmti_count, vm, vm_count);
}

// The current thread's Java frames, leaf first, into `frames`: the VM's own walk from the
// thread's frame anchor (the callbacks and the park hook run with the thread stopped in the VM
// or in native code), else JVMTI GetStackTrace; `jni` is the thread's.
int CaptureJavaStack(JNIEnv* jni, RawFrame* frames, int max_frames, bool* truncated) {
  const char* thread = JavaThreadEnv::ThreadOf(jni);
  int count = 0;
  if (JavaStackWalker::Checking()) {
    count = JvmtiJavaStack(frames, max_frames);
    CheckAgainstVmWalk(thread, frames, count);
  } else {
    count = VmStackWalker::WalkStopped(thread, frames, max_frames);
    if (count == 0) count = JvmtiJavaStack(frames, max_frames);
  }
  *truncated = count == max_frames;
  return count;
}

// The id of `klass`'s name in the class-name dictionary; 0 when unknown. The id becomes the
// class's JVMTI tag in our environment, so that later events of the class cost a tag lookup
// instead of building its signature (the dictionary and its ids live as long as the process).
uint32_t ClassId(jclass klass) {
  Dictionary* names = EventRecorder::class_names();
  if (klass == nullptr || names == nullptr) return 0;
  jlong tag = 0;
  if (g_tag_classes && g_jvmti->GetTag(klass, &tag) == JVMTI_ERROR_NONE && tag != 0) {
    return static_cast<uint32_t>(tag);
  }
  char* signature = nullptr;
  if (g_jvmti->GetClassSignature(klass, &signature, nullptr) != JVMTI_ERROR_NONE) return 0;
  const uint32_t id = names->Intern(InternalClassName(signature));
  g_jvmti->Deallocate(reinterpret_cast<unsigned char*>(signature));
  if (g_tag_classes && id != 0) g_jvmti->SetTag(klass, id);
  return id;
}

// Writes the stack and the class into a kept event and publishes it; `jni` is the thread's.
void Complete(JNIEnv* jni, jclass klass, EventRecorder::Event* event) {
  SampleRecord* record = event->record();
  bool truncated = false;
  record->frame_count =
      static_cast<uint32_t>(CaptureJavaStack(jni, record->frames, event->max_frames(), &truncated));
  if (truncated) record->flags |= kSampleTruncated;
  record->event.class_id = ClassId(klass);
  event->Publish();
}

jlong JavaThreadId(JNIEnv* jni, jthread thread) {
  return g_thread_id != nullptr && thread != nullptr ? jni->GetLongField(thread, g_thread_id) : 0;
}

void JNICALL OnSampledObjectAlloc(jvmtiEnv*, JNIEnv* jni, jthread, jobject object, jclass klass,
                                  jlong size) {
  EventRecorder::Event event;
  if (!EventRecorder::BeginAllocation(static_cast<uint64_t>(size), &event)) return;
  if (g_track_objects.load(std::memory_order_relaxed)) {
    event.record()->event.object_ref = reinterpret_cast<uint64_t>(jni->NewWeakGlobalRef(object));
  }
  Complete(jni, klass, &event);
}

// The calling thread's JNIEnv, or nullptr when it is not attached to the JVM.
JNIEnv* CurrentJni() {
  JNIEnv* jni = nullptr;
  return g_vm->GetEnv(reinterpret_cast<void**>(&jni), JNI_VERSION_1_6) == JNI_OK ? jni : nullptr;
}

class JvmObjectTracker : public ObjectTracker {
 public:
  bool Alive(uint64_t ref) override {
    JNIEnv* jni = CurrentJni();
    return jni != nullptr && !jni->IsSameObject(reinterpret_cast<jweak>(ref), nullptr);
  }
  void Release(uint64_t ref) override {
    JNIEnv* jni = CurrentJni();
    if (jni != nullptr) jni->DeleteWeakGlobalRef(reinterpret_cast<jweak>(ref));
  }
};

void JNICALL OnMonitorContendedEnter(jvmtiEnv*, JNIEnv* jni, jthread thread, jobject) {
  t_enter = PendingEnter{JavaThreadId(jni, thread), EventRecorder::WaitStartTicks()};
}

void JNICALL OnMonitorContendedEntered(jvmtiEnv*, JNIEnv* jni, jthread thread, jobject object) {
  const PendingEnter enter = t_enter;
  t_enter = PendingEnter{0, 0};
  if (enter.start_ticks == 0 || enter.thread_id != JavaThreadId(jni, thread)) return;
  EventRecorder::Event event;
  if (!EventRecorder::BeginWait(SampleKind::kMonitorEnter, enter.start_ticks, &event)) return;
  jclass klass = jni->GetObjectClass(object);
  Complete(jni, klass, &event);
  jni->DeleteLocalRef(klass);
}

// The class of the calling thread's park blocker (a local reference), or nullptr.
jclass ParkBlockerClass(JNIEnv* jni) {
  jthread thread = nullptr;
  if (g_park_blocker == nullptr || jni->ExceptionCheck() ||
      g_jvmti->GetCurrentThread(&thread) != JVMTI_ERROR_NONE) {
    return nullptr;
  }
  jobject blocker = jni->GetObjectField(thread, g_park_blocker);
  jni->DeleteLocalRef(thread);
  if (blocker == nullptr) return nullptr;
  jclass klass = jni->GetObjectClass(blocker);
  jni->DeleteLocalRef(blocker);
  return klass;
}

// Bound to jdk.internal.misc.Unsafe.park(ZJ)V. The session is joined only after the park.
void JNICALL UnsafeParkHook(JNIEnv* jni, jobject unsafe, jboolean absolute, jlong time) {
  const auto park = reinterpret_cast<ParkFunction>(g_original_park.load(std::memory_order_acquire));
  const uint64_t start =
      g_time_parks.load(std::memory_order_relaxed) ? EventRecorder::WaitStartTicks() : 0;
  park(jni, unsafe, absolute, time);
  if (start == 0) return;
  EventRecorder::Event event;
  if (!EventRecorder::BeginWait(SampleKind::kThreadPark, start, &event)) return;
  SampleRecord* record = event.record();
  record->event.park_time = time == 0 ? kNoParkTimeout : time;
  record->event.park_absolute = time != 0 && absolute;
  jclass klass = ParkBlockerClass(jni);
  Complete(jni, klass, &event);
  if (klass != nullptr) jni->DeleteLocalRef(klass);
}

// kUnavailable naming the JVMTI call `what` and its error when `error` is not JVMTI_ERROR_NONE.
Status Check(jvmtiError error, const char* what) {
  if (error == JVMTI_ERROR_NONE) return Status();
  char* name = nullptr;
  g_jvmti->GetErrorName(error, &name);
  Status status = Status::Unavailable(
      std::string(what) + " failed: " + (name != nullptr ? name : std::to_string(error)), 0);
  if (name != nullptr) g_jvmti->Deallocate(reinterpret_cast<unsigned char*>(name));
  return status;
}

Status SetEvents(jvmtiEventMode mode, std::initializer_list<jvmtiEvent> events) {
  for (jvmtiEvent event : events) {
    Status set =
        Check(g_jvmti->SetEventNotificationMode(mode, event, nullptr), "SetEventNotificationMode");
    if (!set.ok()) return set;
  }
  return Status();
}

// Binds the park hook once per process (and finds the Thread fields the callbacks read);
// `jni` is the calling thread's.
Status BindParkHook(JNIEnv* jni) {
  std::lock_guard<std::mutex> lock(g_park_mutex);
  if (g_park_bound) return Status();
  jclass thread_class = jni->FindClass("java/lang/Thread");
  if (thread_class != nullptr) {
    g_thread_id = jni->GetFieldID(thread_class, "tid", "J");
    if (jni->ExceptionCheck()) jni->ExceptionClear();  // ids are then not compared
    g_park_blocker = jni->GetFieldID(thread_class, "parkBlocker", "Ljava/lang/Object;");
    if (jni->ExceptionCheck()) jni->ExceptionClear();  // parkedClass is then null
    jni->DeleteLocalRef(thread_class);
  }
  const Status bound = RebindJdkNative(g_jvmti, jni, "jdk/internal/misc/Unsafe", "park", "(ZJ)V",
                                       reinterpret_cast<void*>(UnsafeParkHook), &g_original_park);
  g_park_bound = bound.ok();
  return bound;
}

Status StartLocks() {
  JNIEnv* jni = nullptr;
  if (g_vm->GetEnv(reinterpret_cast<void**>(&jni), JNI_VERSION_1_6) != JNI_OK) {
    return Status::WrongState(
        "option 'lock': the thread starting the profiler is not a Java thread; start it with "
        "-agentpath, ctxprof attach or io.ctxprof.Profiler");
  }
  const Status bound = BindParkHook(jni);
  if (!bound.ok()) return bound.Prefixed("option 'lock': cannot time LockSupport.park");
  const Status enabled = SetEvents(
      JVMTI_ENABLE, {JVMTI_EVENT_MONITOR_CONTENDED_ENTER, JVMTI_EVENT_MONITOR_CONTENDED_ENTERED});
  if (!enabled.ok()) return enabled.Prefixed("option 'lock'");
  g_time_parks.store(true, std::memory_order_relaxed);
  return Status();
}

Status StartAllocations(const EventRules& rules) {
  g_track_objects.store(rules.live, std::memory_order_relaxed);
  const uint64_t interval = EventRecorder::SamplingInterval(rules);
  Status enabled = Check(
      g_jvmti->SetHeapSamplingInterval(static_cast<jint>(interval < INT_MAX ? interval : INT_MAX)),
      "SetHeapSamplingInterval");
  if (enabled.ok()) enabled = SetEvents(JVMTI_ENABLE, {JVMTI_EVENT_SAMPLED_OBJECT_ALLOC});
  if (!enabled.ok()) {
    return Status::Unavailable(
        "option 'alloc': " + enabled.message() + " (allocation sampling needs JDK 11+)", 0);
  }
  return Status();
}

}  // namespace

std::string JvmEvents::CheckReport() {
  if (!JavaStackWalker::Checking()) return "";
  return "Event walk check: " + std::to_string(g_walk_check.agreed()) + " agreed, " +
         std::to_string(g_walk_check.differed()) + " differed, " +
         std::to_string(g_walk_check.declined()) + " declined" + g_walk_check.Differences("JVMTI");
}

std::unique_ptr<ObjectTracker> JvmEvents::NewObjectTracker() {
  return std::make_unique<JvmObjectTracker>();
}

void JvmEvents::Init(JavaVM* vm) {
  g_vm = vm;
  jvmtiEnv* jvmti = nullptr;
  if (vm->GetEnv(reinterpret_cast<void**>(&jvmti), JVMTI_VERSION_11) != JNI_OK) {
    g_init_status = Status::Unavailable(
        "the JVM offers no JVMTI 11 environment (allocation sampling needs JDK 11+)", 0);
    return;
  }
  jvmtiCapabilities capabilities;
  memset(&capabilities, 0, sizeof(capabilities));
  capabilities.can_generate_sampled_object_alloc_events = 1;
  capabilities.can_generate_monitor_events = 1;
  jvmtiEventCallbacks callbacks;
  memset(&callbacks, 0, sizeof(callbacks));
  callbacks.SampledObjectAlloc = OnSampledObjectAlloc;
  callbacks.MonitorContendedEnter = OnMonitorContendedEnter;
  callbacks.MonitorContendedEntered = OnMonitorContendedEntered;
  g_jvmti = jvmti;
  g_init_status = Check(jvmti->AddCapabilities(&capabilities), "JVMTI AddCapabilities");
  if (g_init_status.ok()) {
    g_init_status =
        Check(jvmti->SetEventCallbacks(&callbacks, sizeof(callbacks)), "JVMTI SetEventCallbacks");
  }
  if (!g_init_status.ok()) {
    g_jvmti = nullptr;
    jvmti->DisposeEnvironment();
    return;
  }
  // Optional: without it every event's class name is built anew.
  jvmtiCapabilities tagging;
  memset(&tagging, 0, sizeof(tagging));
  tagging.can_tag_objects = 1;
  g_tag_classes = jvmti->AddCapabilities(&tagging) == JVMTI_ERROR_NONE;
}

Status JvmEvents::Start(const EventRules& rules) {
  if (g_jvmti == nullptr) {
    return g_init_status.Prefixed(std::string("option '") +
                                  (rules.alloc_interval_bytes != 0 ? "alloc" : "lock") + "'");
  }
  Status started;
  if (rules.lock_enabled) started = StartLocks();
  if (started.ok() && rules.alloc_interval_bytes != 0) started = StartAllocations(rules);
  if (!started.ok()) Stop();
  return started;
}

void JvmEvents::Stop() {
  if (g_jvmti == nullptr) return;
  g_time_parks.store(false, std::memory_order_relaxed);
  g_track_objects.store(false, std::memory_order_relaxed);
  // Best effort: Stop cannot fail, and an event still posted finds no session to join.
  SetEvents(JVMTI_DISABLE, {JVMTI_EVENT_SAMPLED_OBJECT_ALLOC, JVMTI_EVENT_MONITOR_CONTENDED_ENTER,
                            JVMTI_EVENT_MONITOR_CONTENDED_ENTERED});
}

}  // namespace ctxprof
