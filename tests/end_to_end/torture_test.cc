// Torture: 1 ms CPU and wall sampling while 2,000 threads are created and destroyed at up to 200
// per second (~10 s), every thread writing its context in a tight loop. The churn is counted, not
// timed: a slow machine (or TSan) takes longer, it does not create fewer threads. Passing means: no
// crash, stop returns (a deadlock would hit the test timeout), short-lived threads were sampled
// with their context, and the counters (drops, busy contexts, failed threads) are reported.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <thread>

#include "profiler/ctxprof.h"
#include "profiler/profiler.h"
#include "tests/support/session_test_util.h"

namespace ctxprof {
namespace {

using ::ctxprof::testing::StackContains;

__attribute__((noinline)) void WriteContextsInATightLoop(
    uint64_t seed, std::chrono::steady_clock::time_point end) {
  uint64_t i = 0;
  while (std::chrono::steady_clock::now() < end) {
    for (int k = 0; k < 64; ++k, ++i) {
      ctxprof_set_trace_context(seed, i, i + 1);
      ctxprof_set_attribute(0, (i & 1) != 0 ? "odd" : "even");
    }
  }
  ctxprof_clear_context();
}

TEST(TortureTest, ThreadChurnWithContextWritesAtOneMillisecond) {
  const char* names[] = {"parity"};
  ASSERT_EQ(ctxprof_register_attributes(names, 1), 0);
  char error[512];
  ASSERT_EQ(ctxprof_start("event=cpu+wall,interval=1ms,wall=1ms,threads=32,buffer=2048", error,
                          sizeof(error)),
            0)
      << error;
  constexpr uint64_t kThreads = 2000;
  constexpr auto kSpawnPeriod = std::chrono::milliseconds(5);  // at most 200 threads per second
  std::deque<std::thread> live;
  uint64_t created = 0;
  auto next_spawn = std::chrono::steady_clock::now();
  while (created < kThreads) {
    // Lifetimes of 10-49 ms: some outlive the 20 ms discovery rescan, some do not.
    const auto lifetime = std::chrono::milliseconds(10 + created % 40);
    live.emplace_back(WriteContextsInATightLoop, created,
                      std::chrono::steady_clock::now() + lifetime);
    ++created;
    while (live.size() > 16) {
      live.front().join();
      live.pop_front();
    }
    next_spawn += kSpawnPeriod;
    std::this_thread::sleep_until(next_spawn);
  }
  for (auto& thread : live) thread.join();
  ASSERT_EQ(ctxprof_stop(), 0);

  const SessionStats stats = Profiler::Global()->Stats();
  const AggregatorCounters counters = Profiler::Global()->Counters();
  uint64_t churn_samples = 0, with_context = 0;
  for (const AggregatedStack& stack : Profiler::Global()->Stacks()) {
    if (!StackContains(stack, "WriteContextsInATightLoop")) continue;
    churn_samples += stack.samples;
    if (!stack.context.empty()) with_context += stack.samples;
  }
  printf(
      "threads created %lu, armed %lu, failed to arm %lu; samples consumed %lu, dropped %lu; "
      "in churn threads %lu (with context %lu); context busy %lu, torn %lu; truncated %lu; "
      "wall signals %lu\n",
      created, stats.threads_seen, stats.failed_threads, stats.consumed, stats.dropped,
      churn_samples, with_context, counters.context_busy, counters.context_torn, counters.truncated,
      stats.wall_signals);
  EXPECT_GT(stats.threads_seen, 200u);
  EXPECT_GT(churn_samples, 100u);  // ~10,000 normally; ~900 under TSan, which defers signals
  EXPECT_GT(with_context, 0u);
  EXPECT_EQ(stats.consumed, counters.samples);
}

}  // namespace
}  // namespace ctxprof
