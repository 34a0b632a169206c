#include "jni/java_stack_walker.h"

#include <dlfcn.h>

#include <atomic>
#include <cstring>

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

}  // namespace

bool JavaStackWalker::Init(std::string* error) {
  if (g_asgct.load(std::memory_order_acquire) != nullptr) return true;
  void* symbol = dlsym(RTLD_DEFAULT, "AsyncGetCallTrace");
  if (symbol == nullptr) {
    *error = "AsyncGetCallTrace not found in the JVM (not HotSpot?); Java frames are unavailable";
    return false;
  }
  g_asgct.store(reinterpret_cast<AsgctFunction>(symbol), std::memory_order_release);
  return true;
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

int JavaStackWalker::Walk(void* ucontext, RawFrame* frames, int max_depth) {
  JNIEnv* env = t_env;
  const AsgctFunction asgct = g_asgct.load(std::memory_order_acquire);
  if (env == nullptr || asgct == nullptr || max_depth <= 0) return 0;
  AsgctTrace trace{env, 0, reinterpret_cast<AsgctFrame*>(frames)};
  asgct(&trace, max_depth, ucontext);
  if (trace.num_frames <= 0) return 0;
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
      out.kind = IsCompiled(id) ? FrameKind::kJavaJit : FrameKind::kJavaInterpreted;
    }
  }
  return trace.num_frames;
}

}  // namespace ctxprof
