// WallRepeats turns each repeat into a copy of the very sample it names, whatever order the
// drain hands records over in (profiler/session/wall_repeats.h).
#include "profiler/session/wall_repeats.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace ctxprof {
namespace {

constexpr int32_t kTid = 7;

struct Seen {
  uint64_t ticks;
  uint32_t weight;
  uint64_t span_id;  // which sample's header it carries
  uint32_t frame_count;
  uint64_t leaf;  // frames[0].id, 0 without frames
  uint8_t flags;
};

std::unique_ptr<SampleRecord> WallSample(uint64_t ticks) {
  auto record = std::make_unique<SampleRecord>();
  record->ticks = ticks;
  record->tid = kTid;
  record->kind = SampleKind::kWall;
  record->engine = Engine::kWall;
  record->state = ThreadState::kSleeping;
  record->weight = 1;
  record->context.span_id = ticks;
  record->frame_count = 2;
  record->frames[0] = {ticks * 100, kNativeInterruptedPc, FrameKind::kNative};
  record->frames[1] = {ticks * 100 + 1, kNativeReturnAddress, FrameKind::kNative};
  return record;
}

std::unique_ptr<SampleRecord> Repeat(uint64_t ticks, uint64_t repeated_ticks, uint32_t weight) {
  auto record = std::make_unique<SampleRecord>();
  record->ticks = ticks;
  record->tid = kTid;
  record->kind = SampleKind::kWall;
  record->engine = Engine::kWall;
  record->flags = kSampleRepeatLast;
  record->state = ThreadState::kSleeping;
  record->weight = weight;
  record->event.amount = repeated_ticks;
  record->frame_count = 0;
  return record;
}

std::vector<Seen> Feed(WallRepeats* repeats, const std::vector<const SampleRecord*>& records) {
  std::vector<Seen> seen;
  for (const SampleRecord* record : records) {
    repeats->Expand(*record, [&seen](const SampleRecord& out) {
      seen.push_back(Seen{out.ticks, out.weight, out.context.span_id, out.frame_count,
                          out.frame_count > 0 ? out.frames[0].id : 0, out.flags});
    });
  }
  return seen;
}

TEST(WallRepeatsTest, ARepeatCopiesTheSampleItNamesAtItsOwnTimeAndWeight) {
  WallRepeats repeats;
  auto sample = WallSample(100);
  auto repeat = Repeat(150, 100, 3);
  const std::vector<Seen> seen = Feed(&repeats, {sample.get(), repeat.get()});
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1].ticks, 150u);
  EXPECT_EQ(seen[1].weight, 3u);
  EXPECT_EQ(seen[1].span_id, 100u);
  EXPECT_EQ(seen[1].frame_count, 2u);
  EXPECT_EQ(seen[1].leaf, 100u * 100);
  EXPECT_EQ(seen[1].flags, 0);
}

TEST(WallRepeatsTest, ARepeatDrainedAfterTheNextSampleStillCopiesItsOwn) {
  WallRepeats repeats;
  auto first = WallSample(100);
  auto next = WallSample(200);
  auto repeat = Repeat(150, 100, 4);
  const std::vector<Seen> seen = Feed(&repeats, {first.get(), next.get(), repeat.get()});
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[2].ticks, 150u);
  EXPECT_EQ(seen[2].span_id, 100u) << "not the later sample's stack";
  EXPECT_EQ(seen[2].leaf, 100u * 100);
}

TEST(WallRepeatsTest, ARepeatDrainedBeforeItsSampleWaitsForIt) {
  WallRepeats repeats;
  auto older = WallSample(50);
  auto repeat = Repeat(150, 100, 2);
  auto sample = WallSample(100);
  std::vector<Seen> seen = Feed(&repeats, {older.get(), repeat.get()});
  ASSERT_EQ(seen.size(), 1u) << "held, not a copy of the older sample";
  seen = Feed(&repeats, {sample.get()});
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].ticks, 100u);
  EXPECT_EQ(seen[1].ticks, 150u);
  EXPECT_EQ(seen[1].weight, 2u);
  EXPECT_EQ(seen[1].span_id, 100u);
}

TEST(WallRepeatsTest, ARepeatOfASampleNoLongerKeptCountsItsTimeWithoutAStack) {
  WallRepeats repeats;
  auto first = WallSample(100);
  auto second = WallSample(200);
  auto third = WallSample(300);
  auto repeat = Repeat(150, 100, 5);
  const std::vector<Seen> seen =
      Feed(&repeats, {first.get(), second.get(), third.get(), repeat.get()});
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[3].ticks, 150u);
  EXPECT_EQ(seen[3].weight, 5u);
  EXPECT_EQ(seen[3].frame_count, 0u);
  EXPECT_EQ(seen[3].span_id, 0u) << "no context either";
  EXPECT_EQ(seen[3].flags & kSampleRepeatLast, 0);
}

TEST(WallRepeatsTest, OtherRecordsPassUnchanged) {
  WallRepeats repeats;
  auto cpu = WallSample(100);
  cpu->kind = SampleKind::kCpu;
  cpu->flags = kSampleRepeatLast;  // not a wall record: not a repeat either
  const std::vector<Seen> seen = Feed(&repeats, {cpu.get()});
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].frame_count, 2u);
}

}  // namespace
}  // namespace ctxprof
