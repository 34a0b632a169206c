#include "jni/java_stack_walker.h"

#include <dlfcn.h>
#include <ucontext.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "jni/java_thread_env.h"
#include "jni/vm_stack_walker.h"
#include "jni/walk_check.h"
#include "profiler/sampler/fault_guard.h"
#include "profiler/sampler/machine_context.h"

namespace ctxprof {
namespace {

// HotSpot's declarations (not in any JDK header).
struct AsgctFrame {
  jint lineno;  // bci, or -3 for a native method
  jmethodID method_id;
};
struct AsgctTrace {
  JNIEnv* env;
  jint num_frames;  // > 0: frames filled; <= 0: an error code (no Java frames, not walkable)
  AsgctFrame* frames;
};
using AsgctFunction = void (*)(AsgctTrace*, jint, void*);

constexpr jint kNativeMethodLine = -3;
// AsyncGetCallTrace's failure codes (HotSpot forte.cpp) for a thread that was in Java code.
constexpr jint kUnknownJava = -5;
constexpr jint kNotWalkableJava = -6;
constexpr jint kDeoptimizing = -9;

// ASGCT writes its frames straight into the sample's RawFrame array and Walk converts them in
// place (frame i only ever moves to frame i), so the handler needs no 32 KB array of its own.
static_assert(sizeof(AsgctFrame) == sizeof(RawFrame), "in-place conversion needs equal sizes");
static_assert(alignof(AsgctFrame) <= alignof(RawFrame), "in-place conversion needs alignment");

std::atomic<AsgctFunction> g_asgct{nullptr};
__thread JNIEnv* t_env __attribute__((tls_model("initial-exec"))) = nullptr;

// Methods with compiled code: an insert-only open-addressing table of jmethodIDs, readable from
// a signal handler. When it is full, g_compiled_overflow makes every lookup answer "compiled",
// so no frame is wrongly called interpreted.
constexpr size_t kCompiledSlots = 1 << 17;  // 1 MB of zero pages until used
std::atomic<uintptr_t> g_compiled[kCompiledSlots];
std::atomic<bool> g_compiled_overflow{false};
constexpr size_t kMaxProbes = 64;

size_t SlotOf(uintptr_t key) { return (key * 0x9E3779B97F4A7C15ull) >> 47; }

bool IsCompiled(uintptr_t key) {
  if (g_compiled_overflow.load(std::memory_order_relaxed)) return true;
  for (size_t probe = 0, slot = SlotOf(key); probe < kMaxProbes; probe++) {
    const uintptr_t value =
        g_compiled[(slot + probe) & (kCompiledSlots - 1)].load(std::memory_order_relaxed);
    if (value == key) return true;
    if (value == 0) return false;
  }
  return false;
}

// Check mode (CheckReport in the header): ASGCT is the reference; its kinds are exact, and it
// may stop early where the VM walk goes on (its frame::safe_for_sender refused a sender).
WalkCheck g_walk_check(/*compare_kinds=*/true, /*count_extensions=*/true);
std::atomic<bool> g_check{false};
std::atomic<uint64_t> g_only_vm{0};  // ASGCT could not walk (even from the caller); the VM walk did

// Compares ASGCT's typed frames (none when it failed) with the VM walk's from the same context;
// counts the outcome.
void CheckAgainstVmWalk(const char* thread, const void* ucontext, const RawFrame* asgct,
                        int asgct_count) {
  RawFrame vm[WalkCheck::kDepth];
  const int walked = VmStackWalker::Walk(thread, ucontext, vm, WalkCheck::kDepth);
  if (walked == VmStackWalker::kNoJavaFrames) {
    // ASGCT must have found none either: frames where the VM walk says there are none differ.
    if (asgct_count > 0) g_walk_check.Compare(asgct, asgct_count, vm, 0);
    return;
  }
  const int vm_count = walked;
  if (asgct_count == 0) {
    // Where neither walks (no Java frames), nothing changes; where only the VM walk does, the
    // stack is its alone.
    if (vm_count > 0) g_only_vm.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (vm_count == 0) {
    g_walk_check.CountDeclined();
    return;
  }
  g_walk_check.Compare(asgct, asgct_count, vm, vm_count);
}

}  // namespace

Status JavaStackWalker::Init() {
  const char* check = getenv("CTXPROF_CHECK_JAVA_WALK");
  g_check.store(check != nullptr && strcmp(check, "1") == 0, std::memory_order_relaxed);
  if (g_asgct.load(std::memory_order_acquire) != nullptr) return Status();
  void* symbol = dlsym(RTLD_DEFAULT, "AsyncGetCallTrace");
  if (symbol == nullptr) {
    return Status::Unavailable(
        "AsyncGetCallTrace not found in the JVM (not HotSpot?); Java frames are unavailable", 0);
  }
  g_asgct.store(reinterpret_cast<AsgctFunction>(symbol), std::memory_order_release);
  return Status();
}

void JavaStackWalker::SetCurrentThreadEnv(JNIEnv* env) { t_env = env; }

JNIEnv* JavaStackWalker::CurrentThreadEnv() { return t_env; }

void JavaStackWalker::NoteCompiled(jmethodID method) {
  const auto key = reinterpret_cast<uintptr_t>(method);
  if (key == 0) return;
  for (size_t probe = 0, slot = SlotOf(key); probe < kMaxProbes; probe++) {
    std::atomic<uintptr_t>& entry = g_compiled[(slot + probe) & (kCompiledSlots - 1)];
    uintptr_t expected = 0;
    if (entry.compare_exchange_strong(expected, key, std::memory_order_relaxed) ||
        expected == key) {
      return;
    }
  }
  g_compiled_overflow.store(true, std::memory_order_relaxed);
}

FrameKind JavaStackWalker::KindOf(jmethodID method) {
  return IsCompiled(reinterpret_cast<uintptr_t>(method)) ? FrameKind::kJavaJit
                                                         : FrameKind::kJavaInterpreted;
}

namespace {

bool IsUnwalkableJava(jint code) {
  return code == kUnknownJava || code == kNotWalkableJava || code == kDeoptimizing;
}

// The interrupted code one frame up, for a thread that ASGCT could not walk where it stopped:
// a stub (e.g. an intrinsic such as the SHA-256 compressor) or a compiled method's prologue,
// whose Java caller is usually walkable. `frame_pointer` pops a frame that saved the caller's
// frame pointer ([fp] = caller's fp, [fp + 8] = return address: x86-64's push rbp; mov rbp, rsp);
// otherwise the code has no frame and the return address is at [sp]. Every read is fault-guarded
// and the new stack pointer must move up the stack by less than 1 MiB. Returns false when that is
// not plausible.
bool CallerContext(const ucontext_t& interrupted, bool frame_pointer, ucontext_t* caller) {
  const MachineContext registers(&interrupted);
  const uintptr_t sp = registers.sp();
  const uintptr_t fp = registers.fp();
  uintptr_t saved[2] = {fp, 0};  // caller's fp, return address
  uintptr_t caller_sp;
  if (frame_pointer) {
    if (fp < sp || fp - sp >= (1u << 20) ||
        !FaultGuard::SafeRead(reinterpret_cast<const void*>(fp), saved, sizeof(saved))) {
      return false;
    }
    caller_sp = fp + 2 * sizeof(uintptr_t);
  } else {
    if (!FaultGuard::SafeRead(reinterpret_cast<const void*>(sp), &saved[1], sizeof(saved[1]))) {
      return false;
    }
    caller_sp = sp + sizeof(uintptr_t);
  }
  if (saved[1] < 4096) return false;  // not a code address
  *caller = interrupted;
  MachineContext(caller).SetFrame(saved[1], caller_sp, saved[0]);
  return true;
}

}  // namespace

int JavaStackWalker::Walk(void* ucontext, RawFrame* frames, int max_depth) {
  const uint64_t pc = MachineContext(ucontext).pc();
  // One lookup of the interrupted pc, for both the stub test and the VM walk's first frame.
  const VmStackWalker::CodeAt leaf = VmStackWalker::Locate(pc);
  if (max_depth > 1 && leaf.in_stub()) {
    const int java = WalkJava(ucontext, leaf, frames + 1, max_depth - 1);
    // No Java frames, or one frame saying they could not be walked (a whole stack): as is.
    if (java <= 0 || frames[1].kind == FrameKind::kJavaUnwalkable) {
      memmove(frames, frames + 1, static_cast<size_t>(std::max(java, 0)) * sizeof(RawFrame));
      return java;
    }
    frames[0] = {pc, kNativeInterruptedPc, FrameKind::kNative};
    return java + 1;
  }
  return WalkJava(ucontext, leaf, frames, max_depth);
}

int JavaStackWalker::WalkJava(void* ucontext, const VmStackWalker::CodeAt& leaf, RawFrame* frames,
                              int max_depth) {
  JNIEnv* env = t_env != nullptr ? t_env : JavaThreadEnv::Current();
  const AsgctFunction asgct = g_asgct.load(std::memory_order_acquire);
  if (env == nullptr || asgct == nullptr || max_depth <= 0) return 0;
  const char* thread = JavaThreadEnv::ThreadOf(env);
  const bool check = Checking();
  if (!check) {
    // The VM's own walk where it vouches for the whole stack; ASGCT for the others.
    const int walked = VmStackWalker::Walk(thread, ucontext, frames, max_depth,
                                           VmStackWalker::Start::kInterrupted, &leaf);
    if (walked > 0) return walked;
    if (walked == VmStackWalker::kNoJavaFrames) return 0;
  }
  AsgctTrace trace{env, 0, reinterpret_cast<AsgctFrame*>(frames)};
  asgct(&trace, max_depth, ucontext);
  const jint failure = trace.num_frames;
  ucontext_t caller;
  const void* walked = ucontext;  // the context ASGCT's frames come from
  if (IsUnwalkableJava(failure)) {
    for (bool frame_pointer : {true, false}) {
      if (!CallerContext(*static_cast<const ucontext_t*>(ucontext), frame_pointer, &caller)) {
        continue;
      }
      if (!check) {
        // The VM's walk names the call site itself (VmStackWalker::Start::kReturnAddress).
        const int walked_up = VmStackWalker::Walk(thread, &caller, frames, max_depth,
                                                  VmStackWalker::Start::kReturnAddress);
        if (walked_up > 0) return walked_up;
      }
      trace.num_frames = 0;
      asgct(&trace, max_depth, &caller);
      if (trace.num_frames > 0) {
        walked = &caller;
        break;
      }
    }
  }
  if (trace.num_frames <= 0) {
    if (check) CheckAgainstVmWalk(thread, ucontext, frames, 0);
    // Still in Java code the JVM could not walk: one frame saying so (a native walk from a JIT
    // pc would only produce unnamed frames). Other failures (no Java frames, native or VM
    // code, GC) leave the stack to the native walk.
    if (!IsUnwalkableJava(failure)) return 0;
    frames[0] = {static_cast<uint64_t>(-failure), -1, FrameKind::kJavaUnwalkable};
    return 1;
  }
  for (int i = 0; i < trace.num_frames; i++) {
    AsgctFrame frame;
    memcpy(&frame, reinterpret_cast<const char*>(frames) + i * sizeof(AsgctFrame), sizeof(frame));
    const auto id = reinterpret_cast<uintptr_t>(frame.method_id);
    RawFrame& out = frames[i];
    out.id = id;
    if (frame.lineno == kNativeMethodLine) {
      out.bci = -1;
      out.kind = FrameKind::kJavaNative;
    } else {
      out.bci = frame.lineno;
      out.kind = FrameKind::kJavaJit;  // until VmStackWalker says what it is
    }
  }
  // The VM says what the frames are; where it cannot, CompiledMethodLoad's record decides.
  const int typed = VmStackWalker::AssignKinds(thread, walked, frames, trace.num_frames);
  for (int i = typed; i < trace.num_frames; i++) {
    RawFrame& out = frames[i];
    if (out.kind != FrameKind::kJavaNative && !IsCompiled(out.id)) {
      out.kind = FrameKind::kJavaInterpreted;
    }
  }
  if (check) CheckAgainstVmWalk(thread, ucontext, frames, trace.num_frames);
  return trace.num_frames;
}

bool JavaStackWalker::Checking() { return g_check.load(std::memory_order_relaxed); }

std::string JavaStackWalker::CheckReport() {
  if (!Checking()) return "";
  return "Java walk check: " + std::to_string(g_walk_check.agreed()) + " agreed, " +
         std::to_string(g_walk_check.extended()) + " extended, " +
         std::to_string(g_only_vm.load()) + " walked where ASGCT could not, " +
         std::to_string(g_walk_check.differed()) + " differed, " +
         std::to_string(g_walk_check.declined()) + " declined" + g_walk_check.Differences("ASGCT");
}

}  // namespace ctxprof
