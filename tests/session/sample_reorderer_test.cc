#include "profiler/session/sample_reorderer.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace ctxprof {
namespace {

struct Seen {
  uint64_t ticks;
  int32_t tid;
  std::vector<uint64_t> frames;
};

std::unique_ptr<SampleRecord> Sample(uint64_t ticks, int32_t tid, int frames) {
  auto record = std::make_unique<SampleRecord>();
  record->ticks = ticks;
  record->tid = tid;
  record->weight = 1;
  record->context.span_id = ticks * 10;
  record->frame_count = frames;
  for (int i = 0; i < frames; i++) {
    record->frames[i] = {ticks * 100 + i, kNativeReturnAddress, FrameKind::kNative};
  }
  return record;
}

std::vector<Seen> ReleaseUpTo(SampleReorderer* reorderer, uint64_t horizon) {
  std::vector<Seen> seen;
  reorderer->Release(horizon, [&seen](const SampleRecord& record) {
    EXPECT_EQ(record.context.span_id, record.ticks * 10) << "header travels with the sample";
    Seen entry{record.ticks, record.tid, {}};
    for (uint32_t i = 0; i < record.frame_count; i++) entry.frames.push_back(record.frames[i].id);
    seen.push_back(entry);
  });
  return seen;
}

TEST(SampleReordererTest, ReleasesInTickOrderUpToTheHorizon) {
  SampleReorderer reorderer;
  for (uint64_t ticks : {50, 10, 40, 20, 30}) reorderer.Add(*Sample(ticks, 7, ticks / 10));
  std::vector<Seen> first = ReleaseUpTo(&reorderer, 25);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].ticks, 10u);
  EXPECT_EQ(first[1].ticks, 20u);
  EXPECT_EQ(first[1].frames, (std::vector<uint64_t>{2000, 2001}));
  EXPECT_EQ(reorderer.held(), 3u);

  reorderer.Add(*Sample(35, 7, 1));  // published late, still sorted into place
  std::vector<Seen> rest = ReleaseUpTo(&reorderer, UINT64_MAX);
  ASSERT_EQ(rest.size(), 4u);
  EXPECT_EQ(rest[0].ticks, 30u);
  EXPECT_EQ(rest[1].ticks, 35u);
  EXPECT_EQ(rest[2].ticks, 40u);
  EXPECT_EQ(rest[3].ticks, 50u);
  EXPECT_EQ(rest[3].frames, (std::vector<uint64_t>{5000, 5001, 5002, 5003, 5004}))
      << "frames of held samples survive the compaction";
  EXPECT_EQ(reorderer.held(), 0u);
}

TEST(SampleReordererTest, EqualTicksKeepArrivalOrder) {
  SampleReorderer reorderer;
  reorderer.Add(*Sample(5, 1, 0));
  reorderer.Add(*Sample(5, 2, 0));
  reorderer.Add(*Sample(5, 3, 0));
  std::vector<Seen> seen = ReleaseUpTo(&reorderer, 5);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].tid, 1);
  EXPECT_EQ(seen[1].tid, 2);
  EXPECT_EQ(seen[2].tid, 3);
}

TEST(SampleReordererTest, NothingOlderThanTheHorizonMeansNothingReleased) {
  SampleReorderer reorderer;
  reorderer.Add(*Sample(100, 1, 3));
  EXPECT_TRUE(ReleaseUpTo(&reorderer, 99).empty());
  EXPECT_EQ(reorderer.held(), 1u);
  EXPECT_EQ(ReleaseUpTo(&reorderer, 100).size(), 1u);
}

// The session drains its buffer between the records the recording writes: records added by
// `emit` are held for the next release, and the record `emit` is reading stays intact while
// the additions grow the arenas.
TEST(SampleReordererTest, RecordsAddedWhileReleasingWaitForTheNextRelease) {
  SampleReorderer reorderer;
  for (uint64_t ticks : {10, 20, 30, 90}) reorderer.Add(*Sample(ticks, 1, 3));
  std::vector<Seen> first;
  std::vector<size_t> held_during;
  reorderer.Release(50, [&](const SampleRecord& record) {
    held_during.push_back(reorderer.held());
    // Enough added records, with many frames, to grow the spare arena several times over.
    for (uint64_t late = 0; late < 20; late++) {
      reorderer.Add(*Sample(record.ticks + 1 + late % 5, 2, 100));
    }
    Seen entry{record.ticks, record.tid, {}};
    for (uint32_t i = 0; i < record.frame_count; i++) entry.frames.push_back(record.frames[i].id);
    EXPECT_EQ(record.context.span_id, record.ticks * 10);
    first.push_back(entry);
  });
  ASSERT_EQ(first.size(), 3u) << "added records are not released by the release that took them";
  EXPECT_EQ(first[2].ticks, 30u);
  EXPECT_EQ(first[2].frames, (std::vector<uint64_t>{3000, 3001, 3002}));
  // held() counts what is left to emit: 4, then 3 + 20, then 2 + 40.
  EXPECT_EQ(held_during, (std::vector<size_t>{3, 22, 41}));
  EXPECT_EQ(reorderer.held(), 61u);

  std::vector<Seen> rest = ReleaseUpTo(&reorderer, UINT64_MAX);
  ASSERT_EQ(rest.size(), 61u);
  for (size_t i = 1; i < rest.size(); i++) {
    EXPECT_LE(rest[i - 1].ticks, rest[i].ticks) << "added records are sorted into place";
  }
  EXPECT_EQ(rest.back().ticks, 90u);
  EXPECT_EQ(rest.front().frames.size(), 100u) << "an added record keeps all its frames";
  EXPECT_EQ(reorderer.held(), 0u);
}

}  // namespace
}  // namespace ctxprof
