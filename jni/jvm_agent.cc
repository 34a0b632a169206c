#include "jni/jvm_agent.h"

#include <jvmticmlr.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "context/context_map.h"
#include "context/thread_context.h"
#include "jni/attach_command.h"
#include "jni/java_stack_walker.h"
#include "jni/java_thread_env.h"
#include "jni/jfr_sync.h"
#include "jni/jvm_events.h"
#include "jni/jvm_resolvers.h"
#include "jni/jvm_stubs.h"
#include "jni/jvm_threads.h"
#include "jni/virtual_threads.h"
#include "jni/vm_stack_walker.h"
#include "profiler/notice.h"
#include "profiler/options.h"
#include "profiler/profiler.h"

namespace ctxprof {
namespace {

// jvmtiEventCallbacks as JDK 21+ declares it: the JDK 17 headers we build with end at
// SampledObjectAlloc (event 86); 87 and 88 are VirtualThreadStart and VirtualThreadEnd.
struct EventCallbacks {
  jvmtiEventCallbacks base;
  jvmtiEventThreadStart virtual_thread_start;
  jvmtiEventThreadEnd virtual_thread_end;
};

JavaVM* g_vm = nullptr;
jvmtiEnv* g_jvmti = nullptr;
std::mutex g_init_mutex;
std::string g_start_options;  // the agent's start options; run at VMInit
bool g_start_at_init = false;

// Set on the session's background thread: its attach and detach post ThreadStart/ThreadEnd,
// whose callbacks must not take the Profiler's lock (the stopping thread holds it while it
// joins this thread).
__thread bool t_profiler_thread __attribute__((tls_model("initial-exec"))) = false;

bool Check(jvmtiError status, const char* what) {
  if (status == JVMTI_ERROR_NONE) return true;
  char* name = nullptr;
  g_jvmti->GetErrorName(status, &name);
  PrintNotice(std::string(what) + " failed: " + (name != nullptr ? name : std::to_string(status)));
  if (name != nullptr) g_jvmti->Deallocate(reinterpret_cast<unsigned char*>(name));
  return false;
}

// Creates the jmethodIDs of `klass`'s methods (AsyncGetCallTrace can report only methods that
// have one). A class that is not prepared yet gets them from its ClassPrepare event.
void CreateMethodIds(jvmtiEnv* jvmti, jclass klass) {
  jint count = 0;
  jmethodID* methods = nullptr;
  if (jvmti->GetClassMethods(klass, &count, &methods) == JVMTI_ERROR_NONE) {
    jvmti->Deallocate(reinterpret_cast<unsigned char*>(methods));
  }
}

void CreateAllMethodIds(jvmtiEnv* jvmti, JNIEnv* jni) {
  jint count = 0;
  jclass* classes = nullptr;
  if (!Check(jvmti->GetLoadedClasses(&count, &classes), "GetLoadedClasses")) return;
  for (jint i = 0; i < count; i++) {
    CreateMethodIds(jvmti, classes[i]);
    jni->DeleteLocalRef(classes[i]);
  }
  jvmti->Deallocate(reinterpret_cast<unsigned char*>(classes));
}

// The calling thread is a Java thread with `jni`: the handler may walk its Java stack.
void AdoptCurrentThread(jvmtiEnv* jvmti, JNIEnv* jni, jthread thread) {
  JavaStackWalker::SetCurrentThreadEnv(jni);
  JvmThreads::RecordCurrent(jvmti, jni, thread);
}

// Lets the signal handler find every Java thread's JNIEnv from HotSpot's own thread-local
// (java_thread_env.h) and walk Java frames through the VM's structures (vm_stack_walker.h);
// `jni` is the calling thread's. Needs an initialised VM (VMInit or later).
void ReadVmStructures(JNIEnv* jni) {
  const Status thread_env = JavaThreadEnv::Resolve(jni);
  if (!thread_env.ok()) {
    PrintNotice("cannot find the JVM's current-thread key: " + thread_env.message() +
                "; Java frames only on threads that called into libctxprof");
  }
  StatusOr<VmStackWalker::Capabilities> vm_walk = VmStackWalker::Init(jni);
  if (!vm_walk.ok()) {
    PrintNotice("cannot read the JVM's code cache layout: " + vm_walk.status().message() +
                "; Java frame types come from CompiledMethodLoad events (no Inlined frames)");
  } else if (!vm_walk.value().walk.ok() && JavaStackWalker::Checking()) {
    // Only the cost differs (every stack goes to AsyncGetCallTrace): said in check mode only.
    PrintNotice("the VM's own Java walk is unavailable: " + vm_walk.value().walk.message());
  }
}

// One "ctxprof:" line when the session cannot start (the profiler's message names the option,
// the path and the OS error) or started with notes; the JVM runs on either way.
void StartSession(const std::string& options) {
  std::string notes;
  const Status status = Profiler::Global()->Start(options, &notes);
  if (!status.ok()) {
    PrintNotice(status.message() + "; the JVM runs without profiling");
  } else if (!notes.empty()) {
    PrintNotice(notes);
  }
}

void JNICALL OnVMInit(jvmtiEnv* jvmti, JNIEnv* jni, jthread thread) {
  CreateAllMethodIds(jvmti, jni);
  AdoptCurrentThread(jvmti, jni, thread);
  ReadVmStructures(jni);
  if (g_start_at_init) StartSession(g_start_options);
}

void JNICALL OnVMDeath(jvmtiEnv*, JNIEnv*) {
  for (const std::string& check : {JavaStackWalker::CheckReport(), JvmEvents::CheckReport()}) {
    if (!check.empty()) PrintNotice(check);
  }
  if (!Profiler::Global()->Stats().running) return;
  const Status stopped = Profiler::Global()->Stop();
  if (stopped.ok()) return;
  const SessionStats stats = Profiler::Global()->Stats();
  if (stats.recording_error_reported) {
    // The full line was printed when the error happened; do not repeat it.
    PrintNotice("the recording " + stats.recording +
                " is incomplete: writing stopped at the error reported earlier");
  } else {
    PrintNotice(stopped.message());
  }
}

void JNICALL OnThreadStart(jvmtiEnv* jvmti, JNIEnv* jni, jthread thread) {
  if (t_profiler_thread) return;
  AdoptCurrentThread(jvmti, jni, thread);
  const pid_t tid = CachedTid();
  ThreadContext::OnThreadStart(tid);
  Profiler::Global()->OnThreadStart(tid);
}

void JNICALL OnThreadEnd(jvmtiEnv*, JNIEnv*, jthread) {
  if (t_profiler_thread) return;
  const pid_t tid = CachedTid();
  Profiler::Global()->OnThreadEnd(tid);
  ThreadContext::OnThreadEnd(tid);
  JavaStackWalker::SetCurrentThreadEnv(nullptr);
}

// Enabled because AsyncGetCallTrace refuses to walk (ticks_no_class_load) unless some agent
// has ClassLoad events on; the jmethodIDs are created at ClassPrepare.
void JNICALL OnClassLoad(jvmtiEnv*, JNIEnv*, jthread, jclass) {}

void JNICALL OnClassPrepare(jvmtiEnv* jvmti, JNIEnv*, jthread, jclass klass) {
  CreateMethodIds(jvmti, klass);
}

void JNICALL OnCompiledMethodLoad(jvmtiEnv*, jmethodID method, jint, const void*, jint,
                                  const jvmtiAddrLocationMap*, const void* compile_info) {
  JavaStackWalker::NoteCompiled(method);
  // Methods inlined into this code also run as (inlined) compiled frames.
  for (auto* record = static_cast<const jvmtiCompiledMethodLoadRecordHeader*>(compile_info);
       record != nullptr; record = record->next) {
    if (record->kind != JVMTI_CMLR_INLINE_INFO) continue;
    const auto* inline_info = reinterpret_cast<const jvmtiCompiledMethodLoadInlineRecord*>(record);
    for (jint pc = 0; pc < inline_info->numpcs; pc++) {
      const PCStackInfo& info = inline_info->pcinfo[pc];
      for (jint frame = 0; frame < info.numstackframes; frame++) {
        JavaStackWalker::NoteCompiled(info.methods[frame]);
      }
    }
  }
}

// Records the JVM's generated code, which names stub frames (JvmStubs). Enabling the event also
// makes HotSpot keep the code descriptions AsyncGetCallTrace relies on.
void JNICALL OnDynamicCodeGenerated(jvmtiEnv*, const char* name, const void* address, jint length) {
  JvmStubs::Add(name, address, length);
}

void AttachBackgroundThread() {
  t_profiler_thread = true;
  JNIEnv* jni = nullptr;
  JavaVMAttachArgs args{JNI_VERSION_1_6, const_cast<char*>("ctxprof writer"), nullptr};
  if (g_vm->AttachCurrentThreadAsDaemon(reinterpret_cast<void**>(&jni), &args) != JNI_OK) {
    PrintNotice("cannot attach the writer thread to the JVM; Java frames will be named [unknown]");
  }
}

void DetachBackgroundThread() { g_vm->DetachCurrentThread(); }

// can_support_virtual_threads follows can_generate_sampled_object_alloc_events in JDK 21+'s
// jvmtiCapabilities; the JDK 17 headers have an unnamed bit there.
void SetVirtualThreadCapability(jvmtiCapabilities* capabilities) {
  jvmtiCapabilities probe;
  memset(&probe, 0, sizeof(probe));
  probe.can_generate_sampled_object_alloc_events = 1;
  auto* probe_bytes = reinterpret_cast<unsigned char*>(&probe);
  auto* bytes = reinterpret_cast<unsigned char*>(capabilities);
  for (size_t bit = 0; bit + 1 < sizeof(probe) * 8; bit++) {
    if (probe_bytes[bit / 8] & (1u << (bit % 8))) {
      const size_t next = bit + 1;
      bytes[next / 8] |= static_cast<unsigned char>(1u << (next % 8));
      return;
    }
  }
}

bool HasSameBits(const jvmtiCapabilities& wanted, const jvmtiCapabilities& available) {
  const auto* w = reinterpret_cast<const unsigned char*>(&wanted);
  const auto* a = reinterpret_cast<const unsigned char*>(&available);
  for (size_t i = 0; i < sizeof(wanted); i++) {
    if ((w[i] & a[i]) != w[i]) return false;
  }
  return true;
}

Status InitLocked(JavaVM* vm, bool live) {
  if (g_jvmti != nullptr) return Status();
  jvmtiEnv* jvmti = nullptr;
  if (vm->GetEnv(reinterpret_cast<void**>(&jvmti), JVMTI_VERSION_1_2) != JNI_OK) {
    return Status::Unavailable("cannot get a JVMTI environment (JVMTI 1.2) from the JVM", 0);
  }
  g_vm = vm;
  g_jvmti = jvmti;
  jvmtiCapabilities potential;
  memset(&potential, 0, sizeof(potential));
  Check(jvmti->GetPotentialCapabilities(&potential), "GetPotentialCapabilities");
  jvmtiCapabilities wanted;
  memset(&wanted, 0, sizeof(wanted));
  wanted.can_generate_compiled_method_load_events = 1;
  wanted.can_get_line_numbers = 1;
  Check(jvmti->AddCapabilities(&wanted), "AddCapabilities (compiled methods, line numbers)");
  jvmtiCapabilities virtual_threads;
  memset(&virtual_threads, 0, sizeof(virtual_threads));
  SetVirtualThreadCapability(&virtual_threads);
  const bool has_virtual_threads = HasSameBits(virtual_threads, potential) &&
                                   jvmti->AddCapabilities(&virtual_threads) == JVMTI_ERROR_NONE;

  EventCallbacks callbacks;
  memset(&callbacks, 0, sizeof(callbacks));
  callbacks.base.VMInit = OnVMInit;
  callbacks.base.VMDeath = OnVMDeath;
  callbacks.base.ThreadStart = OnThreadStart;
  callbacks.base.ThreadEnd = OnThreadEnd;
  callbacks.base.ClassLoad = OnClassLoad;
  callbacks.base.ClassPrepare = OnClassPrepare;
  callbacks.base.CompiledMethodLoad = OnCompiledMethodLoad;
  callbacks.base.DynamicCodeGenerated = OnDynamicCodeGenerated;
  if (has_virtual_threads) {
    callbacks.virtual_thread_start = VirtualThreads::OnStart;
    callbacks.virtual_thread_end = VirtualThreads::OnEnd;
  }
  if (!Check(jvmti->SetEventCallbacks(
                 &callbacks.base, has_virtual_threads ? sizeof(callbacks) : sizeof(callbacks.base)),
             "SetEventCallbacks")) {
    return Status::Unavailable("cannot install JVMTI callbacks", 0);
  }
  bool thread_events = true;
  for (jvmtiEvent event :
       {JVMTI_EVENT_VM_INIT, JVMTI_EVENT_VM_DEATH, JVMTI_EVENT_THREAD_START, JVMTI_EVENT_THREAD_END,
        JVMTI_EVENT_CLASS_LOAD, JVMTI_EVENT_CLASS_PREPARE, JVMTI_EVENT_COMPILED_METHOD_LOAD,
        JVMTI_EVENT_DYNAMIC_CODE_GENERATED}) {
    const bool enabled = Check(jvmti->SetEventNotificationMode(JVMTI_ENABLE, event, nullptr),
                               "SetEventNotificationMode");
    if (event == JVMTI_EVENT_THREAD_START || event == JVMTI_EVENT_THREAD_END) {
      thread_events = thread_events && enabled;
    }
  }
  bool virtual_thread_events = false;
  if (has_virtual_threads) {
    const Status enabled = VirtualThreads::Enable(jvmti);
    virtual_thread_events = enabled.ok();
    if (!virtual_thread_events) {
      PrintNotice("virtual threads: " + enabled.message() +
                  "; their context is not saved across unmounts and their samples belong to their "
                  "carriers");
    }
  }

  RuntimeHooks hooks;
  hooks.reports_threads = thread_events;
  const Status walker = JavaStackWalker::Init();
  if (walker.ok()) {
    hooks.java_walk = JavaStackWalker::Walk;
    hooks.java_code = VmStackWalker::InCodeCache;
  } else {
    PrintNotice(walker.message());
  }
  if (virtual_thread_events) hooks.virtual_thread = VirtualThreads::Mounted;
  hooks.frame_resolver = [jvmti, vm] { return std::make_unique<JvmFrameResolver>(jvmti, vm); };
  hooks.thread_resolver = [vm] { return std::make_unique<JvmThreadResolver>(vm); };
  hooks.background_start = AttachBackgroundThread;
  hooks.background_end = DetachBackgroundThread;
  JvmEvents::Init(vm);
  hooks.events_start = JvmEvents::Start;
  hooks.events_stop = JvmEvents::Stop;
  hooks.object_tracker = JvmEvents::NewObjectTracker;
  hooks.jdk_recorder = [vm](const JdkRecorderRequest& request) {
    return JfrSync::Start(vm, request);
  };
  Profiler::Global()->SetRuntimeHooks(std::move(hooks));

  if (live) {
    JNIEnv* jni = nullptr;
    if (vm->GetEnv(reinterpret_cast<void**>(&jni), JNI_VERSION_1_6) == JNI_OK) {
      ReadVmStructures(jni);
      CreateAllMethodIds(jvmti, jni);
      jthread thread = nullptr;
      if (jvmti->GetCurrentThread(&thread) == JVMTI_ERROR_NONE) {
        AdoptCurrentThread(jvmti, jni, thread);
        jni->DeleteLocalRef(thread);
      }
    }
    Check(jvmti->GenerateEvents(JVMTI_EVENT_COMPILED_METHOD_LOAD), "GenerateEvents");
    Check(jvmti->GenerateEvents(JVMTI_EVENT_DYNAMIC_CODE_GENERATED), "GenerateEvents");
  }
  return Status();
}

}  // namespace

Status JvmAgent::Init(JavaVM* vm, bool live) {
  std::lock_guard<std::mutex> lock(g_init_mutex);
  return InitLocked(vm, live);
}

jvmtiEnv* JvmAgent::jvmti() {
  std::lock_guard<std::mutex> lock(g_init_mutex);
  return g_jvmti;
}

void JvmAgent::SeeCurrentThread(JNIEnv* env) {
  if (JavaStackWalker::CurrentThreadEnv() == env) return;
  jvmtiEnv* jvmti = JvmAgent::jvmti();
  if (jvmti == nullptr) return;
  jthread thread = nullptr;
  if (jvmti->GetCurrentThread(&thread) != JVMTI_ERROR_NONE) return;
  AdoptCurrentThread(jvmti, env, thread);
  env->DeleteLocalRef(thread);
}

namespace {
// Written once (the class initializes once), read by attach threads: release/acquire.
std::atomic<jclass> java_otel_class{nullptr};
std::atomic<jmethodID> java_otel_sync{nullptr};
}  // namespace

void JvmAgent::RegisterJavaOtel(JNIEnv* env, jclass otel_record) {
  if (java_otel_class.load(std::memory_order_acquire) != nullptr) return;
  jmethodID sync = env->GetStaticMethodID(otel_record, "sync", "()V");
  jclass global = sync == nullptr ? nullptr : static_cast<jclass>(env->NewGlobalRef(otel_record));
  if (global == nullptr) {
    env->ExceptionClear();  // no Java publishing switch: attach starts reach native writers only
    return;
  }
  java_otel_sync.store(sync, std::memory_order_relaxed);
  java_otel_class.store(global, std::memory_order_release);
}

void JvmAgent::SyncJavaOtel(JNIEnv* env) {
  jclass type = java_otel_class.load(std::memory_order_acquire);
  if (type == nullptr) return;  // the Java API has not initialized it: it syncs when it does
  env->CallStaticVoidMethod(type, java_otel_sync.load(std::memory_order_relaxed));
  env->ExceptionClear();
}

}  // namespace ctxprof

using ctxprof::JvmAgent;

namespace {

// Agent options: empty (load only; the Java API starts sessions) or "start[,options]".
// Returns false after printing one line when they are wrong; the JVM then runs unprofiled.
bool ParseAgentOptions(const char* text, std::string* start_options) {
  const std::string options = text != nullptr ? text : "";
  if (options.empty()) return false;
  const std::string command = options.substr(0, options.find(','));
  if (command != "start") {
    ctxprof::PrintNotice(
        "agent command '" + command +
        "' is not supported; use -agentpath:libctxprof.so=start,<options>; the JVM "
        "runs without profiling");
    return false;
  }
  *start_options = command.size() < options.size() ? options.substr(command.size() + 1) : "";
  const ctxprof::StatusOr<ctxprof::Options> parsed = ctxprof::ParseOptions(*start_options);
  if (!parsed.ok()) {
    ctxprof::PrintNotice(parsed.status().message() + "; the JVM runs without profiling");
    return false;
  }
  return true;
}

}  // namespace

extern "C" {

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM* vm, char* options, void*) {
  std::string start_options;
  const bool start = ParseAgentOptions(options, &start_options);
  const ctxprof::Status initialised = JvmAgent::Init(vm, /*live=*/false);
  if (!initialised.ok()) {
    ctxprof::PrintNotice(initialised.message() + "; the JVM runs without profiling");
    return 0;
  }
  if (!start) return 0;
  ctxprof::g_start_options = start_options;
  ctxprof::g_start_at_init = true;
  return 0;
}

JNIEXPORT jint JNICALL Agent_OnAttach(JavaVM* vm, char* options, void*) {
  return ctxprof::AttachCommand::Run(vm, options);
}

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM* vm, void*) {
  const ctxprof::Status initialised = JvmAgent::Init(vm, /*live=*/true);
  if (!initialised.ok()) ctxprof::PrintNotice(initialised.message());
  return JNI_VERSION_1_6;
}

}  // extern "C"
