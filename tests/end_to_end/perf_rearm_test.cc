// A continuous perf event whose signal comes late (more than one overflow since the last one) is
// made one-shot for one overflow, so that a slow handler cannot starve the thread, and then
// continuous again (perf_engine.h, "Arming"). It used to stay one-shot, and the thread paid a
// re-arm ioctl at every later sample. Here a thread blocks the profiling signal while it burns
// 20 ms of CPU (20 overflows at 1 ms, one pending signal), unblocks it, and burns 300 ms more:
// one late signal, then ~300 samples that must need no re-arm.
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <string>
#include <thread>

#include "profiler/ctxprof.h"
#include "profiler/profiler.h"
#include "profiler/sampler/perf_engine.h"
#include "tests/support/session_test_util.h"

namespace ctxprof {
namespace {

using ::ctxprof::testing::Spin;
using ::ctxprof::testing::ThreadCpuNanos;

std::atomic<uint64_t> g_sink{0};

void Burn(uint64_t cpu_nanos) {
  const uint64_t end = ThreadCpuNanos() + cpu_nanos;
  uint64_t value = 1;
  while (ThreadCpuNanos() < end) value = Spin(20000, value);
  g_sink += value;
}

TEST(PerfRearmTest, LateSignalMakesTheEventOneShotForOneOverflowOnly) {
  const std::string path = std::string(getenv("TEST_TMPDIR")) + "/rearm.jfr";
  // Kernel frames on (the default): the ring is what makes the event continuous.
  const std::string options = "event=cpu,interval=1ms,file=" + path;
  char error[512];
  ASSERT_EQ(ctxprof_start(options.c_str(), error, sizeof(error)), 0) << error;
  uint64_t rearms_before = 0, rearms_after_late = 0, rearms_after = 0;
  std::thread burner([&] {
    Burn(50 * 1000 * 1000ull);  // armed by the registry's rescan meanwhile, then sampled
    rearms_before = PerfEngine::rearms();
    sigset_t profiling;
    sigemptyset(&profiling);
    sigaddset(&profiling, SIGPROF);
    pthread_sigmask(SIG_BLOCK, &profiling, nullptr);
    Burn(20 * 1000 * 1000ull);
    pthread_sigmask(SIG_UNBLOCK, &profiling, nullptr);  // the late signal runs here
    Burn(5 * 1000 * 1000ull);
    rearms_after_late = PerfEngine::rearms();
    Burn(300 * 1000 * 1000ull);
    rearms_after = PerfEngine::rearms();
  });
  burner.join();
  const SessionStats stats = Profiler::Global()->Stats();
  ASSERT_EQ(ctxprof_stop(), 0);
  ASSERT_EQ(stats.cpu_engine, "cpu") << "perf_event refused: this test needs it";
  // The late signal re-armed the event once (the only overflows blocked were this thread's).
  EXPECT_GE(rearms_after_late - rearms_before, 1u);
  // ~300 more samples: continuous again, so (nearly) none re-armed; a one-shot event would have
  // needed one re-arm per sample. A few late signals on a loaded machine are allowed.
  EXPECT_LE(rearms_after - rearms_after_late, 10u);
  EXPECT_GE(stats.consumed, 250u);
}

}  // namespace
}  // namespace ctxprof
