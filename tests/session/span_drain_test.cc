// SpanDrain: the times it maps from the span logs. Java writers before JDK 22 stamp spans with
// CLOCK_MONOTONIC (kMonotonicFlag), which a TSC session maps through pairs read at each drain;
// the mapping moves between drains, yet consecutive intervals of a thread, converted in
// different drains, must abut exactly (an interval's begin is the previous one's end), and so
// must a thread's open interval and its last closed one. (The mapping moves most under load,
// when a pair's reads are preempted; on a quiet machine this checks the invariant alone.)
#include "profiler/session/span_drain.h"

#include <gtest/gtest.h>
#include <time.h>

#include <string>
#include <vector>

#include "profiler/sampler/tsc_clock.h"

namespace ctxprof {
namespace {

uint64_t MonotonicStamp() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return kMonotonicFlag | (static_cast<uint64_t>(now.tv_sec) * 1000000000 + now.tv_nsec);
}

void SleepMillis(long millis) {
  const timespec pause = {0, millis * 1000000};
  nanosleep(&pause, nullptr);
}

TEST(SpanDrainTest, IntervalsConvertedInDifferentDrainsAbutExactly) {
  std::string note;
  std::unique_ptr<Clock> clock = CreateClock(ClockKind::kTsc, &note);
  if (std::string(clock->Name()) != "tsc") {
    GTEST_SKIP() << "no invariant TSC here (" << note << "): nothing to map";
  }
  std::string error;
  ContextMap* map = ContextMap::Create(1 << 16, &error);
  ASSERT_NE(map, nullptr) << error;
  const int32_t tid = 4242;
  ContextBlock* block = map->BlockFor(tid);
  ASSERT_NE(block, nullptr);
  SpanLog* log = map->span_logs().Claim(tid);
  ASSERT_NE(log, nullptr);
  SpanDrain drain(map, clock.get());

  ContextSnapshot context{};
  context.trace_id_low = 1;
  std::vector<SpanInterval> spans;
  std::vector<SpanDrain::OpenInterval> opens;
  std::unordered_set<int32_t> timed;
  uint64_t stamp = MonotonicStamp();
  log->SetOpenBegin(stamp, 0);
  for (int round = 0; round < 6; round++) {
    // Two intervals per round; the drains between them read new pairs (>= 1 ms apart).
    for (int k = 0; k < 2; k++) {
      context.span_id = round * 2 + k + 1;
      SleepMillis(10);
      {
        BlockWriter writer(block);
        writer.SetSpanId(context.span_id);
        writer.SetTraceId(0, 1);
      }
      const uint64_t end = MonotonicStamp();
      ContextSnapshot closing = context;
      closing.span_id = context.span_id;
      log->EndInterval(closing, end);
      log->SetOpenBegin(end, 0);
    }
    drain.Drain([&spans](const SpanInterval& span) { spans.push_back(span); }, &timed,
                [&opens](const SpanDrain::OpenInterval& open) { opens.push_back(open); });
  }
  ASSERT_EQ(spans.size(), 12u);
  for (size_t i = 1; i < spans.size(); i++) {
    EXPECT_EQ(spans[i].begin_ticks, spans[i - 1].end_ticks) << "interval " << i;
    EXPECT_LT(spans[i].begin_ticks, spans[i].end_ticks) << "interval " << i;
  }
  ASSERT_EQ(opens.size(), 6u);
  for (size_t round = 0; round < opens.size(); round++) {
    EXPECT_EQ(opens[round].begin_ticks, spans[round * 2 + 1].end_ticks) << "round " << round;
  }
}

}  // namespace
}  // namespace ctxprof
