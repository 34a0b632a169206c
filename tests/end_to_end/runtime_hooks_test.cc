// RuntimeHooks: what the JVM layer plugs into a session, exercised with a fake Java stack walker,
// a fake code-cache probe and a fake Java frame resolver. For each cstack= mode, samples of a
// "Java" thread (the walker returns two Java frames for it; it reaches its native hot loop
// through a function the probe calls Java code, as a Java native method's callees are reached
// from the VM's code) and of a native thread (the walker returns none) must have exactly the
// frames the mode promises; the aggregator must name Java frames with the runtime's resolver;
// the background hooks must run once per session.
#include <gtest/gtest.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "profiler/ctxprof.h"
#include "profiler/profiler.h"
#include "tests/support/session_test_util.h"

namespace ctxprof {
namespace {

using ::ctxprof::testing::Spin;
using ::ctxprof::testing::StackContains;

constexpr uint64_t kLeafId = 0x1111;
constexpr uint64_t kCallerId = 0x2222;
constexpr uint64_t kJavaTrace = 1;
constexpr uint64_t kNativeTrace = 2;

__thread bool t_java __attribute__((tls_model("initial-exec"))) = false;
std::atomic<uint64_t> g_sink{0};
std::atomic<int> g_background_starts{0};
std::atomic<int> g_background_ends{0};

int FakeJavaWalk(void*, RawFrame* frames, int max_depth) {
  if (!t_java || max_depth < 2) return 0;
  frames[0] = RawFrame{kLeafId, 7, FrameKind::kJavaJit};
  frames[1] = RawFrame{kCallerId, 3, FrameKind::kJavaInterpreted};
  return 2;
}

// The fake "VM code": functions in this section (the linker defines its bounds).
extern "C" char __start_ctxprof_fake_java_code[];
extern "C" char __stop_ctxprof_fake_java_code[];

bool FakeJavaCode(uint64_t pc) {
  return pc >= reinterpret_cast<uintptr_t>(__start_ctxprof_fake_java_code) &&
         pc < reinterpret_cast<uintptr_t>(__stop_ctxprof_fake_java_code);
}

class FakeJavaResolver : public FrameResolver {
 public:
  void Resolve(const RawFrame& frame, ResolvedFrame* out) override {
    out->class_name = "demo/Fake";
    out->method_name = frame.id == kLeafId ? "leaf" : frame.id == kCallerId ? "caller" : "?";
  }
};

uint64_t ThreadCpuNanos() {
  timespec now;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000000u + now.tv_nsec;
}

// Spins until `stop`, publishing the thread's CPU time so the test can run for an amount of
// CPU (what samples follow) rather than of wall time.
__attribute__((noinline)) void NativeHotLoop(const std::atomic<bool>* stop,
                                             std::atomic<uint64_t>* cpu_nanos) {
  const uint64_t start = ThreadCpuNanos();
  while (!stop->load(std::memory_order_relaxed)) {
    g_sink += Spin(100000, 5);
    cpu_nanos->store(ThreadCpuNanos() - start, std::memory_order_relaxed);
  }
}

// The Java thread's way into native code: "VM code" calling a native function. It sets and
// clears the context itself, as Java code does: a sample tagged with the Java trace is then
// always below the VM code, even one taken inside ctxprof_set_trace_context (whose first call
// on a thread registers it), so no such sample can carry Worker or start_thread.
__attribute__((noinline, section("ctxprof_fake_java_code"))) void CallFromJavaCode(
    const std::atomic<bool>* stop, std::atomic<uint64_t>* cpu_nanos) {
  ctxprof_set_trace_context(0, kJavaTrace, 0);
  NativeHotLoop(stop, cpu_nanos);
  ctxprof_clear_context();
  g_sink += 1;  // not a tail call: this frame stays on the stack while the context is cleared
}

void Worker(const std::atomic<bool>* stop, std::atomic<uint64_t>* cpu_nanos, bool java) {
  t_java = java;
  if (java) {
    CallFromJavaCode(stop, cpu_nanos);
    return;
  }
  ctxprof_set_trace_context(0, kNativeTrace, 0);
  NativeHotLoop(stop, cpu_nanos);
  ctxprof_clear_context();
}

std::vector<AggregatedStack> RunSession(const std::string& cstack) {
  RuntimeHooks hooks;
  hooks.java_walk = FakeJavaWalk;
  hooks.java_code = FakeJavaCode;
  hooks.frame_resolver = [] { return std::make_unique<FakeJavaResolver>(); };
  hooks.background_start = [] { g_background_starts++; };
  hooks.background_end = [] { g_background_ends++; };
  Profiler::Global()->SetRuntimeHooks(std::move(hooks));
  std::string notes;
  const Status started =
      Profiler::Global()->Start("event=cpu,interval=1ms,cstack=" + cstack, &notes);
  EXPECT_TRUE(started.ok()) << started.message();
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> java_cpu{0};
  std::atomic<uint64_t> native_cpu{0};
  std::thread java(Worker, &stop, &java_cpu, true);
  std::thread native(Worker, &stop, &native_cpu, false);
  // 300 ms of CPU each (~300 samples at 1 ms), however loaded the machine is; capped at 60 s.
  constexpr uint64_t kCpuNanos = 300 * 1000 * 1000;
  for (int i = 0; i < 6000 && (java_cpu < kCpuNanos || native_cpu < kCpuNanos); i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  stop = true;
  java.join();
  native.join();
  const Status stopped = Profiler::Global()->Stop();
  EXPECT_TRUE(stopped.ok()) << stopped.message();
  Profiler::Global()->SetRuntimeHooks(RuntimeHooks());
  return Profiler::Global()->Stacks();
}

struct Counts {
  uint64_t java = 0;    // samples of the Java worker
  uint64_t native = 0;  // samples of the native worker
  // Samples whose native part reaches NativeHotLoop. The native walk is best effort (a walk
  // cut short by a fault, or a sample between setting the context and entering the loop, does
  // not), so it is checked on nearly all samples rather than on every one.
  uint64_t in_hot_loop = 0;
  uint64_t with_native_part = 0;
  uint64_t native_with_caller = 0;  // native worker samples that reach Worker
};

void ExpectNativePartsReachTheHotLoop(const Counts& counts) {
  EXPECT_GE(counts.in_hot_loop * 10, counts.with_native_part * 9)
      << counts.in_hot_loop << " of " << counts.with_native_part;
}

const std::vector<std::string> kJavaFrames = {"demo.Fake.leaf", "demo.Fake.caller"};

bool IsKernelFrame(const std::string& frame) {
  return frame.size() > 4 && frame.compare(frame.size() - 4, 4, "_[k]") == 0;
}

// The frames below the kernel frames a sample starts with when it interrupted the kernel
// (a system call, an interrupt's return path): the Java or native stack the mode promises.
std::vector<std::string> UserFrames(const AggregatedStack& stack) {
  size_t kernel = 0;
  while (kernel < stack.frames.size() && IsKernelFrame(stack.frames[kernel])) kernel++;
  return std::vector<std::string>(stack.frames.begin() + static_cast<long>(kernel),
                                  stack.frames.end());
}

bool EndsWithJavaFrames(const AggregatedStack& stack) {
  const size_t n = stack.frames.size();
  return n >= 2 && stack.frames[n - 2] == kJavaFrames[0] && stack.frames[n - 1] == kJavaFrames[1];
}

// cstack=no: Java frames only, kernel frames neither.
TEST(RuntimeHooksTest, CstackNoGivesJavaFramesOrNothing) {
  Counts counts;
  for (const AggregatedStack& stack : RunSession("no")) {
    if (stack.context.trace_id_low == kJavaTrace) {
      EXPECT_EQ(stack.frames, kJavaFrames);
      counts.java += stack.samples;
    } else if (stack.context.trace_id_low == kNativeTrace) {
      EXPECT_TRUE(stack.frames.empty());
      counts.native += stack.samples;
    }
  }
  EXPECT_GE(counts.java, 20u);
  EXPECT_GE(counts.native, 20u);
}

TEST(RuntimeHooksTest, CstackNativeFallsBackToNativeFrames) {
  Counts counts;
  for (const AggregatedStack& stack : RunSession("native")) {
    if (stack.context.trace_id_low == kJavaTrace) {
      EXPECT_EQ(UserFrames(stack), kJavaFrames);
      counts.java += stack.samples;
    } else if (stack.context.trace_id_low == kNativeTrace) {
      counts.with_native_part += stack.samples;
      if (StackContains(stack, "NativeHotLoop")) counts.in_hot_loop += stack.samples;
      EXPECT_FALSE(EndsWithJavaFrames(stack));
      counts.native += stack.samples;
    }
  }
  EXPECT_GE(counts.java, 20u);
  EXPECT_GE(counts.native, 20u);
  ExpectNativePartsReachTheHotLoop(counts);
}

// The mixed stack (cstack=dwarf, the default; fp; java+native): the Java thread's native frames
// up to the "VM code", then its Java frames, and nothing of what lies beyond the VM code (the
// caller of CallFromJavaCode, the thread's start-up frames); the native thread's whole stack.
class MixedStackTest : public ::testing::TestWithParam<const char*> {};

TEST_P(MixedStackTest, NativeFramesUpToTheJavaCodeThenTheJavaFrames) {
  Counts counts;
  for (const AggregatedStack& stack : RunSession(GetParam())) {
    if (stack.context.trace_id_low == kJavaTrace) {
      EXPECT_TRUE(EndsWithJavaFrames(stack));
      for (const std::string& frame : stack.frames) {
        EXPECT_EQ(frame.find("CallFromJavaCode"), std::string::npos);
        EXPECT_EQ(frame.find("Worker"), std::string::npos);
        EXPECT_EQ(frame.find("start_thread"), std::string::npos);
      }
      counts.java += stack.samples;
    } else if (stack.context.trace_id_low == kNativeTrace) {
      EXPECT_FALSE(EndsWithJavaFrames(stack));
      if (StackContains(stack, "Worker")) counts.native_with_caller += stack.samples;
      counts.native += stack.samples;
    } else {
      continue;
    }
    counts.with_native_part += stack.samples;
    if (StackContains(stack, "NativeHotLoop")) counts.in_hot_loop += stack.samples;
  }
  EXPECT_GE(counts.java, 20u);
  EXPECT_GE(counts.native, 20u);
  EXPECT_GE(counts.native_with_caller * 10, counts.native * 9);
  ExpectNativePartsReachTheHotLoop(counts);
}

INSTANTIATE_TEST_SUITE_P(Spellings, MixedStackTest, ::testing::Values("dwarf", "fp", "java+native"),
                         [](const auto& info) {
                           return std::string(info.param) == "java+native"
                                      ? std::string("java_native")
                                      : std::string(info.param);
                         });

TEST(RuntimeHooksTest, BackgroundHooksRunOncePerSession) {
  const int starts = g_background_starts.load();
  const int ends = g_background_ends.load();
  RunSession("native");
  EXPECT_EQ(g_background_starts.load(), starts + 1);
  EXPECT_EQ(g_background_ends.load(), ends + 1);
}

}  // namespace
}  // namespace ctxprof
