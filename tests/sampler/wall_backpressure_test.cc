// The wall engine's backpressure (wall_engine.h): while records wait in the sample buffer up to
// its high-water mark, the engine signals nobody, and the first signal after the drain carries
// every interval the thread was left unsignalled, so its wall time stays accounted for.
//
// The engine runs here on its own, with a buffer the test fills and drains by hand and a test
// handler on SIGUSR2 that only adds up the weights it receives (and finishes the witness slot,
// as the profiler's handler does, so the engine does not wait for it).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "profiler/sampler/sample_buffer.h"
#include "profiler/sampler/tsc_clock.h"
#include "profiler/sampler/wall_engine.h"
#include "profiler/sampler/wall_witness.h"

namespace ctxprof {
namespace {

std::atomic<uint64_t> g_signals{0};
std::atomic<uint64_t> g_weight{0};
std::atomic<uint64_t> g_first_weight{0};
WallWitnessTable* g_witnesses = nullptr;

void OnWallSignal(int, siginfo_t* info, void* ucontext) {
  const int saved_errno = errno;
  uint32_t weight, slot;
  WallWitnessTable::Decode(info->si_value, &weight, &slot);
  uint64_t none = 0;
  g_first_weight.compare_exchange_strong(none, weight, std::memory_order_relaxed);
  g_weight.fetch_add(weight, std::memory_order_relaxed);
  g_signals.fetch_add(1, std::memory_order_relaxed);
  const pid_t tid = static_cast<pid_t>(syscall(SYS_gettid));
  g_witnesses->WitnessFromHandler(slot, tid, 0, 0, ucontext, nullptr);
  errno = saved_errno;
}

// Waits (bounded, 30 s) until done() holds; true when it did.
template <typename Done>
bool AwaitCondition(Done done) {
  for (int i = 0; i < 30000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return done();
}

TEST(WallBackpressureTest, FullBufferDefersSignalsAndTheirIntervals) {
  EXPECT_EQ(WallEngine::SignalBudget(16, 0, 1024), 16);
  EXPECT_EQ(WallEngine::SignalBudget(16, 256, 1024), 16);  // up to a quarter: no backpressure
  EXPECT_EQ(WallEngine::SignalBudget(16, 257, 1024), 16);  // rounded up
  EXPECT_EQ(WallEngine::SignalBudget(16, 640, 1024), 8);
  EXPECT_EQ(WallEngine::SignalBudget(16, 1023, 1024), 1);
  EXPECT_EQ(WallEngine::SignalBudget(16, 1024, 1024), 0);
  EXPECT_EQ(WallEngine::SignalBudget(16, 5000, 1024), 0);

  StatusOr<std::unique_ptr<SampleBuffer>> created = SampleBuffer::Create(8, 4);
  ASSERT_TRUE(created.ok());
  SampleBuffer& buffer = *created.value();
  // Publish records up to the high-water mark: the engine's budget is 0.
  for (uint32_t i = 0; i < buffer.high_water(); ++i) {
    SampleRecord* record = buffer.TryClaim();
    ASSERT_NE(record, nullptr);
    record->kind = SampleKind::kCpu;
    record->frame_count = 0;
    buffer.Publish(record);
  }
  ASSERT_EQ(WallEngine::SignalBudget(16, buffer.pending(), buffer.high_water()), 0);

  struct sigaction action = {};
  action.sa_sigaction = OnWallSignal;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  struct sigaction previous;
  ASSERT_EQ(sigaction(SIGUSR2, &action, &previous), 0);

  WallWitnessTable witnesses;
  g_witnesses = &witnesses;
  MonotonicClock clock;
  std::atomic<pid_t> target_tid{0};
  std::atomic<bool> stop{false};
  std::thread target([&] {
    target_tid = static_cast<pid_t>(syscall(SYS_gettid));
    while (!stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  ASSERT_TRUE(AwaitCondition([&] { return target_tid.load() != 0; }));

  {
    WallEngine engine(1000000, SIGUSR2, 16, false, nullptr, &buffer, &clock, &witnesses);
    bool refused = false;
    ASSERT_TRUE(engine.Start(&refused).ok());
    engine.AddThread(target_tid.load());
    const uint64_t throttled_before = engine.throttled_ticks();
    ASSERT_TRUE(AwaitCondition([&] { return engine.throttled_ticks() >= throttled_before + 50; }));
    EXPECT_EQ(engine.signals_sent(), 0u);
    EXPECT_EQ(engine.intervals_accounted(), 0u);
    EXPECT_EQ(g_signals.load(), 0u);

    const uint64_t throttled = engine.throttled_ticks();
    EXPECT_EQ(buffer.Drain([](const SampleRecord&) {}), buffer.high_water());
    ASSERT_TRUE(AwaitCondition([] { return g_signals.load() >= 3; }));
    // The first signal stands for the ticks it waited through since the thread was added.
    EXPECT_GE(g_first_weight.load(), throttled - throttled_before);
    engine.Stop();
    // Every interval the engine accounted for reached the handler as weight.
    EXPECT_EQ(g_weight.load(), engine.intervals_accounted());
    printf("throttled ticks %lu, then %lu signals; first weight %lu, total weight %lu\n",
           static_cast<unsigned long>(throttled), static_cast<unsigned long>(g_signals.load()),
           static_cast<unsigned long>(g_first_weight.load()),
           static_cast<unsigned long>(g_weight.load()));
  }
  stop = true;
  target.join();
  sigaction(SIGUSR2, &previous, nullptr);
}

// An idle thread's checks thin out: every tick for a second, every 2nd for the next, then every
// kMaxCheckSpacing-th (200 ticks a second at 5 ms).
TEST(WallEngineTest, CheckSpacingThinsOutAfterASecondStill) {
  EXPECT_EQ(WallEngine::CheckSpacing(0, 200), 1u);
  EXPECT_EQ(WallEngine::CheckSpacing(199, 200), 1u);
  EXPECT_EQ(WallEngine::CheckSpacing(200, 200), 2u);
  EXPECT_EQ(WallEngine::CheckSpacing(399, 200), 2u);
  EXPECT_EQ(WallEngine::CheckSpacing(400, 200), WallEngine::kMaxCheckSpacing);
  EXPECT_EQ(WallEngine::CheckSpacing(UINT64_MAX / 2, 200), WallEngine::kMaxCheckSpacing);
  EXPECT_EQ(WallEngine::CheckSpacing(0, 1), 1u);  // 1 s intervals and longer
  EXPECT_EQ(WallEngine::CheckSpacing(2, 1), WallEngine::kMaxCheckSpacing);
}

// A quiet thread found gone: of the ticks its check spacing left unchecked, as many as it ran
// (at least one) go to its next sample and the rest to its wait; ticks the sampler skipped past
// the due check (it woke late) all go to the next sample.
TEST(WallEngineTest, OnlyTheTicksSpacingLeftUncheckedAreSplitByCpu) {
  constexpr uint64_t kInterval = 5000000;  // 5 ms
  // Checked at 100, due at 104, found gone at 104 after 1 ms of CPU: waited 101..103.
  EXPECT_EQ(WallEngine::TicksStillWaiting(100, 104, 104, 1000000, kInterval), 3u);
  // After 7 ms of CPU: ran 2 intervals, waited 2.
  EXPECT_EQ(WallEngine::TicksStillWaiting(100, 104, 104, 7000000, kInterval), 2u);
  // Ran longer than the gap: waited none.
  EXPECT_EQ(WallEngine::TicksStillWaiting(100, 104, 104, 50000000, kInterval), 0u);
  // Checked every tick: nothing to split.
  EXPECT_EQ(WallEngine::TicksStillWaiting(100, 101, 101, 0, kInterval), 0u);
  // The sampler woke 12 ticks late: its skipped ticks are not the wait's, with spacing 1 or 4.
  EXPECT_EQ(WallEngine::TicksStillWaiting(100, 101, 113, 10000000, kInterval), 0u);
  EXPECT_EQ(WallEngine::TicksStillWaiting(100, 104, 116, 1000000, kInterval), 3u);
}

}  // namespace
}  // namespace ctxprof
