// Every CPU engine's recorded weight adds up to the process's CPU time, in the default output:
// the JFR file as a reader that counts jdk.ExecutionSample events sees it (a sample that stands
// for N intervals is written as N events, docs/JFR.md). Two threads burn a known amount of
// thread CPU time; events x interval must match it. The ctimer and itimer engines fire at the
// kernel's tick (HZ=250: 4 ms) at best, so at interval=1ms most of their weight comes from the
// timer's overrun count: losing it would understate CPU about 4x.
//
// The tolerance is wide so that a loaded machine never fails the test (a starved thread is
// sampled late, not less: its overruns carry the weight); the tight number is a benchmark's.
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "profiler/ctxprof.h"
#include "profiler/jfr/jfr_reader.h"
#include "tests/support/session_test_util.h"
#include "tests/support/status_testing.h"

namespace ctxprof {
namespace {

using ::ctxprof::testing::Spin;
using ::ctxprof::testing::ThreadCpuNanos;

std::atomic<uint64_t> g_sink{0};

constexpr uint64_t kBurnNanos = 600 * 1000 * 1000ull;  // per thread

__attribute__((noinline)) void Burn(uint64_t cpu_nanos, std::atomic<uint64_t>* used) {
  const uint64_t start = ThreadCpuNanos();
  const uint64_t end = start + cpu_nanos;
  uint64_t value = 1;
  while (ThreadCpuNanos() < end) value = Spin(20000, value);
  g_sink += value;
  *used += ThreadCpuNanos() - start;
}

uint64_t ProcessCpuNanos() {
  timespec now;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000000u + static_cast<uint64_t>(now.tv_nsec);
}

// The recording's jdk.ExecutionSample events (a sample of weight N is N events).
void CountExecutionSamples(const std::string& path, uint64_t* events) {
  JfrReader reader;
  ASSERT_TRUE(IsOk(reader.Read(path, {})));
  for (const JfrEvent& event : reader.events()) {
    if (event.type_name() == "jdk.ExecutionSample") ++*events;
  }
}

struct WeightCase {
  const char* name;
  const char* engine;
  uint64_t interval_nanos;
};

class CpuWeightTest : public ::testing::TestWithParam<WeightCase> {};

TEST_P(CpuWeightTest, EventsTimesIntervalMatchTheCpuUsed) {
  const WeightCase& param = GetParam();
  const std::string path = std::string(getenv("TEST_TMPDIR")) + "/" + param.name + ".jfr";
  const std::string options = std::string("event=") + param.engine +
                              ",interval=" + std::to_string(param.interval_nanos / 1000) +
                              "us,file=" + path;
  char error[512];
  const uint64_t process_before = ProcessCpuNanos();
  ASSERT_EQ(ctxprof_start(options.c_str(), error, sizeof(error)), 0) << options << ": " << error;
  std::atomic<uint64_t> used{0};
  std::vector<std::thread> burners;
  for (int i = 0; i < 2; ++i) burners.emplace_back(Burn, kBurnNanos, &used);
  for (auto& burner : burners) burner.join();
  ASSERT_EQ(ctxprof_stop(), 0);
  // The truth is the process's CPU time over the session (the measure; itimer's too):
  // the burners, and the profiler's own threads, which the per-thread engines do not sample.
  const uint64_t process_cpu = ProcessCpuNanos() - process_before;

  uint64_t events = 0;
  ASSERT_NO_FATAL_FAILURE(CountExecutionSamples(path, &events));
  const double recorded = static_cast<double>(events * param.interval_nanos);
  const double ratio = recorded / static_cast<double>(process_cpu);
  printf(
      "%s: %lu events x %lu us = %.3f s recorded for %.3f s of process CPU (%.3f s in the "
      "burners): ratio %.3f\n",
      param.name, events, param.interval_nanos / 1000, recorded / 1e9, process_cpu / 1e9,
      used.load() / 1e9, ratio);
  EXPECT_GT(ratio, 0.6);
  EXPECT_LT(ratio, 1.5);
}

INSTANTIATE_TEST_SUITE_P(Engines, CpuWeightTest,
                         ::testing::Values(WeightCase{"cpu_1ms", "cpu", 1000000},
                                           WeightCase{"cpu_10ms", "cpu", 10000000},
                                           WeightCase{"ctimer_1ms", "ctimer", 1000000},
                                           WeightCase{"ctimer_10ms", "ctimer", 10000000},
                                           WeightCase{"itimer_1ms", "itimer", 1000000},
                                           WeightCase{"itimer_10ms", "itimer", 10000000}),
                         [](const auto& info) { return std::string(info.param.name); });

// The cpu engine's events are continuous (perf_engine.h): a standard signal does not queue, so
// the overflows that happen while it is blocked reach the handler as one signal, and the ring's
// records must carry their weight. Blocked for 800 ms of CPU at 1 ms, the ring (one page) fills
// after ~256-512 overflows and the kernel reports the rest as lost: both kinds count. The event
// then turns one-shot (it fell behind) and must go on sampling the unblocked 400 ms.
TEST(CpuWeightBlockedTest, OverflowsWhileTheSignalIsBlockedCountInTheNextSamples) {
  const std::string path = std::string(getenv("TEST_TMPDIR")) + "/blocked.jfr";
  const std::string options = "event=cpu,interval=1ms,file=" + path;
  char error[512];
  ASSERT_EQ(ctxprof_start(options.c_str(), error, sizeof(error)), 0) << options << ": " << error;
  std::atomic<uint64_t> used{0};
  std::thread burner([&used] {
    sigset_t profiling;
    sigemptyset(&profiling);
    sigaddset(&profiling, SIGPROF);  // signal=, default
    ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &profiling, nullptr), 0);
    Burn(800 * 1000 * 1000ull, &used);
    ASSERT_EQ(pthread_sigmask(SIG_UNBLOCK, &profiling, nullptr), 0);
    Burn(400 * 1000 * 1000ull, &used);
  });
  burner.join();
  ASSERT_EQ(ctxprof_stop(), 0);

  uint64_t events = 0;
  ASSERT_NO_FATAL_FAILURE(CountExecutionSamples(path, &events));
  // The burner is the only busy thread; without the blocked overflows the ratio is ~0.55, with
  // sampling stopped after the signal was unblocked ~0.67.
  const double ratio = static_cast<double>(events) * 1e6 / static_cast<double>(used.load());
  printf("%lu events x 1 ms for %.3f s of the burner's CPU: ratio %.3f\n", events,
         used.load() / 1e9, ratio);
  EXPECT_GT(ratio, 0.8);
  EXPECT_LT(ratio, 1.25);
}

}  // namespace
}  // namespace ctxprof
