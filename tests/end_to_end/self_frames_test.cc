// No sample contains a frame of the profiler itself. With event=cpu+wall a CPU signal can arrive
// while the wall handler is walking a stack (and the other way round); the handler's own frames
// (OnSignal, the walker, libunwind) must never end up in a sample. Two threads burn CPU at
// interval=1ms while the wall engine signals them every millisecond; every stack of every sample
// is checked.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "profiler/ctxprof.h"
#include "profiler/profiler.h"
#include "tests/support/session_test_util.h"

namespace ctxprof {
namespace {

using ::ctxprof::testing::FrameIs;
using ::ctxprof::testing::Spin;
using ::ctxprof::testing::ThreadCpuNanos;

std::atomic<uint64_t> g_sink{0};

__attribute__((noinline)) void BurnCpu(uint64_t nanos) {
  const uint64_t end = ThreadCpuNanos() + nanos;
  while (ThreadCpuNanos() < end) g_sink += Spin(20000, end);
}

// A frame that only the signal path produces: our handler and what it calls.
bool IsProfilerFrame(const std::string& frame) {
  for (const char* function : {"OnSignal", "TakeSample", "WalkStack", "StateOf", "Rearm"}) {
    if (FrameIs(frame, function)) return true;
  }
  for (const char* fragment : {"StackWalker::", "FaultGuard::", "SampleBuffer::", "ReadBlock",
                               "_ULx86_64_", "_Ux86_64_", "unw_"}) {
    if (frame.find(fragment) != std::string::npos) return true;
  }
  return false;
}

TEST(SelfFramesTest, NoSampleContainsAFrameOfTheProfiler) {
  char error[512];
  ASSERT_EQ(ctxprof_start("event=cpu,interval=1ms,wall=1ms,threads=64", error, sizeof(error)), 0)
      << error;
  std::vector<std::thread> burners;
  for (int i = 0; i < 2; ++i) burners.emplace_back(BurnCpu, 1500ull * 1000 * 1000);
  for (auto& burner : burners) burner.join();
  ASSERT_EQ(ctxprof_stop(), 0);

  uint64_t samples = 0, cpu = 0, wall = 0, with_profiler_frames = 0;
  for (const AggregatedStack& stack : Profiler::Global()->Stacks()) {
    samples += stack.samples;
    (stack.kind == SampleKind::kCpu ? cpu : wall) += stack.samples;
    for (const std::string& frame : stack.frames) {
      if (!IsProfilerFrame(frame)) continue;
      with_profiler_frames += stack.samples;
      std::string frames;
      for (const std::string& f : stack.frames) frames += "\n    " + f;
      ADD_FAILURE() << stack.samples << " " << (stack.kind == SampleKind::kCpu ? "cpu" : "wall")
                    << " sample(s) contain the profiler frame '" << frame << "':" << frames;
      break;
    }
  }
  printf("%lu samples (cpu %lu, wall %lu), %lu with a profiler frame\n", samples, cpu, wall,
         with_profiler_frames);
  // 3 s of CPU at 1 ms and ~2 threads signalled per ms for ~1.5 s: thousands of each on an idle
  // machine; the bounds only make sure both engines ran.
  EXPECT_GE(cpu, 300u);
  EXPECT_GE(wall, 300u);
  EXPECT_EQ(with_profiler_frames, 0u);
}

}  // namespace
}  // namespace ctxprof
