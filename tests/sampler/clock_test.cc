#include <gtest/gtest.h>
#include <time.h>

#include <cmath>

#include "profiler/sampler/tsc_clock.h"

namespace ctxprof {
namespace {

int64_t Nanos(clockid_t clock) {
  timespec now;
  clock_gettime(clock, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}

TEST(ClockTest, TscIsUsedWhenInvariant) {
  std::string note;
  std::unique_ptr<Clock> clock = CreateClock(ClockKind::kTsc, &note);
  if (TscClock::CpuHasInvariantTsc()) {
    EXPECT_STREQ(clock->Name(), "tsc");
    EXPECT_TRUE(note.empty()) << note;
  } else {
    EXPECT_STREQ(clock->Name(), "monotonic");
    EXPECT_NE(note.find("clock=tsc"), std::string::npos) << note;
  }
}

TEST(ClockTest, MonotonicOnRequest) {
  std::string note;
  std::unique_ptr<Clock> clock = CreateClock(ClockKind::kMonotonic, &note);
  EXPECT_STREQ(clock->Name(), "monotonic");
  EXPECT_EQ(clock->TicksPerSecond(), 1000000000u);
  EXPECT_TRUE(note.empty());
}

// jfrsync=: ticks are CLOCK_MONOTONIC nanoseconds minus the JDK recorder's origin.
TEST(ClockTest, MonotonicFromAnOrigin) {
  const uint64_t origin = static_cast<uint64_t>(Nanos(CLOCK_MONOTONIC)) - 5000000000u;
  MonotonicClock clock(origin);
  EXPECT_EQ(clock.MonotonicOrigin(), origin);
  const uint64_t before = static_cast<uint64_t>(Nanos(CLOCK_MONOTONIC)) - origin;
  const uint64_t ticks = clock.Now();
  const uint64_t after = static_cast<uint64_t>(Nanos(CLOCK_MONOTONIC)) - origin;
  EXPECT_LE(before, ticks);
  EXPECT_LE(ticks, after);
  // Wall time is unchanged by the origin.
  const int64_t realtime = Nanos(CLOCK_REALTIME);
  EXPECT_LT(std::llabs(clock.EpochNanosAt(clock.Now()) - realtime), 50000000);
}

// The calibrated rate converts a TSC interval into CLOCK_MONOTONIC time within 1 %. This is an
// accuracy property of the calibration (both clocks measure the same interval), not a timing
// threshold of the code under test.
TEST(ClockTest, TscRateMatchesMonotonic) {
  if (!TscClock::CpuHasInvariantTsc()) GTEST_SKIP() << "no invariant TSC on this machine";
  StatusOr<std::unique_ptr<TscClock>> created = TscClock::Create();
  ASSERT_TRUE(created.ok()) << created.status().message();
  const TscClock* clock = created.value().get();
  const uint64_t ticks_start = clock->Now();
  const int64_t mono_start = Nanos(CLOCK_MONOTONIC);
  const timespec pause = {0, 200 * 1000 * 1000};
  nanosleep(&pause, nullptr);
  const uint64_t ticks_end = clock->Now();
  const int64_t mono_end = Nanos(CLOCK_MONOTONIC);
  const double tsc_seconds =
      static_cast<double>(ticks_end - ticks_start) / static_cast<double>(clock->TicksPerSecond());
  const double mono_seconds = static_cast<double>(mono_end - mono_start) / 1e9;
  EXPECT_NEAR(tsc_seconds / mono_seconds, 1.0, 0.01);
}

// The anchor maps "now" in ticks to the wall clock: within 10 ms of CLOCK_REALTIME.
TEST(ClockTest, EpochNanosAtNowIsRealtime) {
  for (ClockKind kind : {ClockKind::kTsc, ClockKind::kMonotonic}) {
    std::string note;
    std::unique_ptr<Clock> clock = CreateClock(kind, &note);
    const int64_t realtime = Nanos(CLOCK_REALTIME);
    const int64_t mapped = clock->EpochNanosAt(clock->Now());
    EXPECT_LT(std::llabs(mapped - realtime), 10 * 1000 * 1000) << clock->Name();
  }
}

}  // namespace
}  // namespace ctxprof
