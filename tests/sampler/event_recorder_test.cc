// EventRecorder: allocation weights and thinning (the arithmetic and its effect on recorded
// weights), lock thresholds and select=if-context, the session rules (no session, waits from
// before the session, a full buffer) and the records' contents.
#include "profiler/sampler/event_recorder.h"

#include <gtest/gtest.h>
#include <time.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "context/process_context.h"
#include "profiler/sampler/tsc_clock.h"

namespace ctxprof {
namespace {

constexpr uint64_t kInterval = 512 * 1024;

TEST(AllocationWeightTest, UnbiasedForExponentialSampling) {
  // An object of s bytes is sampled with probability 1 - exp(-s / I); its weight is s over that.
  EXPECT_EQ(EventRecorder::AllocationWeight(kInterval, kInterval),
            std::llround(kInterval / (1 - std::exp(-1.0))));
  // Small objects stand for about one interval (plus half their size), large ones for themselves.
  EXPECT_NEAR(EventRecorder::AllocationWeight(16, kInterval), kInterval + 8, 1);
  EXPECT_EQ(EventRecorder::AllocationWeight(100 * kInterval, kInterval), 100 * kInterval);
  EXPECT_EQ(EventRecorder::AllocationWeight(0, kInterval), kInterval);
}

TEST(AllocationWeightTest, ThinningTurnsAFineSamplingIntoACoarseOne) {
  const uint64_t fine = kInterval / EventRecorder::kContextIntervalDivisor;
  for (uint64_t size : std::vector<uint64_t>{16, 1000, fine, kInterval, 50 * kInterval}) {
    SCOPED_TRACE(size);
    const double keep = EventRecorder::KeepProbability(size, kInterval, fine);
    EXPECT_GT(keep, 0);
    EXPECT_LE(keep, 1);
    // P(sampled at fine) * P(kept) = P(sampled at coarse).
    EXPECT_NEAR((1 - std::exp(-static_cast<double>(size) / fine)) * keep,
                1 - std::exp(-static_cast<double>(size) / kInterval), 1e-12);
  }
  EXPECT_NEAR(EventRecorder::KeepProbability(16, kInterval, fine), 1.0 / 16, 1e-4);
}

TEST(SamplingIntervalTest, IfContextSamplesFiner) {
  EventRules rules;
  EXPECT_EQ(EventRecorder::SamplingInterval(rules), 0u);
  rules.alloc_interval_bytes = kInterval;
  EXPECT_EQ(EventRecorder::SamplingInterval(rules), kInterval);
  rules.if_context = true;
  EXPECT_EQ(EventRecorder::SamplingInterval(rules), kInterval / 16);
  rules.alloc_interval_bytes = 8;
  EXPECT_EQ(EventRecorder::SamplingInterval(rules), 1u);
}

// A session over a real buffer and the process context store, on the test's own thread.
class EventRecorderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    store_ = ProcessContext::Get(&error);
    ASSERT_NE(store_, nullptr) << error;
    block_ = store_->map().BlockFor(CachedTid());
    ASSERT_NE(block_, nullptr);
    StatusOr<std::unique_ptr<SampleBuffer>> buffer = SampleBuffer::Create(4096, 16);
    ASSERT_TRUE(buffer.ok()) << buffer.status().message();
    buffer_ = std::move(buffer.value());
    std::string note;
    clock_ = CreateClock(ClockKind::kMonotonic, &note);
    SetContext(false);
  }
  void TearDown() override {
    EventRecorder::Deactivate();
    SetContext(false);
  }
  void Activate(const EventRules& rules) {
    EventRecorder::Activate(
        EventRecorder::Session{buffer_.get(), clock_.get(), &store_->map(), 16, rules});
  }
  void SetContext(bool set) {
    BlockWriter writer(block_);
    writer.SetTraceId(set ? 0xAB : 0, set ? 0xCD : 0);
    writer.SetSpanId(set ? 0xEF : 0);
  }
  std::vector<SampleRecord> Drain() {
    std::vector<SampleRecord> records;
    buffer_->Drain([&records](const SampleRecord& record) {
      records.emplace_back();
      memcpy(&records.back(), &record, offsetof(SampleRecord, frames));
    });
    return records;
  }
  // An allocation of `size` through BeginAllocation; true when recorded.
  bool Allocate(uint64_t size) {
    EventRecorder::Event event;
    if (!EventRecorder::BeginAllocation(size, &event)) return false;
    event.record()->event.class_id = 7;
    event.Publish();
    return true;
  }
  // A wait that lasts at least `millis` (0: a wait ended at once, far below any threshold).
  bool Wait(SampleKind kind, int millis) {
    const uint64_t start = EventRecorder::WaitStartTicks();
    if (start == 0) return false;
    const timespec pause = {0, millis * 1000000L};
    if (millis > 0) nanosleep(&pause, nullptr);
    EventRecorder::Event event;
    return EventRecorder::BeginWait(kind, start, &event);
  }

  ProcessContext* store_ = nullptr;
  ContextBlock* block_ = nullptr;
  std::unique_ptr<SampleBuffer> buffer_;
  std::unique_ptr<Clock> clock_;
};

TEST_F(EventRecorderTest, NothingIsRecordedWithoutASession) {
  EXPECT_EQ(EventRecorder::WaitStartTicks(), 0u);
  EXPECT_FALSE(Allocate(1000));
  EventRecorder::Event event;
  EXPECT_FALSE(EventRecorder::BeginWait(SampleKind::kMonitorEnter, 1, &event));
  EXPECT_TRUE(Drain().empty());
}

TEST_F(EventRecorderTest, AllocationRecordsCarryWeightSizeClassAndContext) {
  EventRules rules;
  rules.alloc_interval_bytes = kInterval;
  Activate(rules);
  SetContext(true);
  ASSERT_TRUE(Allocate(1000));
  SetContext(false);
  ASSERT_TRUE(Allocate(3 * kInterval));
  const std::vector<SampleRecord> records = Drain();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].kind, SampleKind::kAllocation);
  EXPECT_EQ(records[0].engine, Engine::kRuntime);
  EXPECT_EQ(records[0].tid, CachedTid());
  EXPECT_EQ(records[0].event.amount, EventRecorder::AllocationWeight(1000, kInterval));
  EXPECT_EQ(records[0].event.object_bytes, 1000u);
  EXPECT_EQ(records[0].event.class_id, 7u);
  EXPECT_EQ(records[0].context.trace_id_low, 0xCDu);
  EXPECT_EQ(records[0].context.span_id, 0xEFu);
  EXPECT_TRUE(records[1].context.empty());
  EXPECT_EQ(records[1].event.amount, EventRecorder::AllocationWeight(3 * kInterval, kInterval));
  EXPECT_FALSE(Wait(SampleKind::kMonitorEnter, 20));  // lock= not given
}

TEST_F(EventRecorderTest, IfContextKeepsEverySampleInsideAndThinsOutsideToAlloc) {
  EventRules rules;
  rules.alloc_interval_bytes = kInterval;
  rules.if_context = true;
  Activate(rules);
  const uint64_t fine = EventRecorder::SamplingInterval(rules);
  EventRecorder::SeedThreadRandom(12345);
  constexpr int kSamples = 3000;  // the runtime's samples at the finer interval, per side
  SetContext(true);
  for (int i = 0; i < kSamples; i++) ASSERT_TRUE(Allocate(100));
  std::vector<SampleRecord> records = Drain();  // the buffer holds 4,096
  SetContext(false);
  for (int i = 0; i < 16 * kSamples; i++) Allocate(100);
  const std::vector<SampleRecord> more = Drain();
  records.insert(records.end(), more.begin(), more.end());
  uint64_t inside = 0, outside = 0, inside_weight = 0, outside_weight = 0;
  for (const SampleRecord& record : records) {
    if (record.context.empty()) {
      outside++;
      outside_weight += record.event.amount;
      EXPECT_EQ(record.event.amount, EventRecorder::AllocationWeight(100, kInterval));
    } else {
      inside++;
      inside_weight += record.event.amount;
      EXPECT_EQ(record.event.amount, EventRecorder::AllocationWeight(100, fine));
    }
  }
  EXPECT_EQ(inside, static_cast<uint64_t>(kSamples));
  // Outside, about one in 16 is kept (binomial: mean 3000, sd ~53), each standing for 16 times
  // more: the weight stays the bytes the fine samples stood for.
  const double expected = 16.0 * kSamples * EventRecorder::AllocationWeight(100, fine);
  EXPECT_NEAR(outside, kSamples, 300);
  EXPECT_NEAR(outside_weight / expected, 1.0, 0.1);
  EXPECT_NEAR(inside_weight, kSamples * EventRecorder::AllocationWeight(100, fine), 1);
}

TEST_F(EventRecorderTest, WaitsUnderTheThresholdCountOnlyInsideContextsWithIfContext) {
  EventRules rules;
  rules.lock_enabled = true;
  rules.lock_threshold_ns = 10 * 1000 * 1000;
  Activate(rules);
  EXPECT_TRUE(Wait(SampleKind::kThreadPark, 20));  // 20 ms >= 10 ms
  EventRecorder::Deactivate();
  // A threshold no wait here can reach (nothing depends on how fast this machine is).
  rules.lock_threshold_ns = 3600ull * 1000 * 1000 * 1000;
  Activate(rules);
  EXPECT_FALSE(Wait(SampleKind::kMonitorEnter, 0));
  SetContext(true);
  EXPECT_FALSE(Wait(SampleKind::kMonitorEnter, 0));  // select=all: context or not
  EventRecorder::Deactivate();
  rules.if_context = true;
  Activate(rules);
  EXPECT_TRUE(Wait(SampleKind::kMonitorEnter, 0));
  SetContext(false);
  EXPECT_FALSE(Wait(SampleKind::kMonitorEnter, 0));
  const std::vector<SampleRecord> records = Drain();
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].kind, SampleKind::kThreadPark);
  EXPECT_TRUE(records[0].context.empty());
  EXPECT_GE(records[0].event.amount, 20 * clock_->TicksPerSecond() / 1000);
  EXPECT_EQ(records[1].kind, SampleKind::kMonitorEnter);
  EXPECT_FALSE(records[1].context.empty());
}

TEST_F(EventRecorderTest, WaitsFromBeforeTheSessionAreDropped) {
  EventRules rules;
  rules.lock_enabled = true;
  Activate(rules);
  const uint64_t before = EventRecorder::WaitStartTicks();
  EventRecorder::Deactivate();
  Activate(rules);  // a new session starts after the wait did
  EventRecorder::Event event;
  EXPECT_FALSE(EventRecorder::BeginWait(SampleKind::kMonitorEnter, before, &event));
  EXPECT_TRUE(Drain().empty());
}

TEST_F(EventRecorderTest, AFullBufferDropsAndCounts) {
  EventRules rules;
  rules.alloc_interval_bytes = kInterval;
  Activate(rules);
  int recorded = 0;
  for (int i = 0; i < 5000; i++) recorded += Allocate(100) ? 1 : 0;
  EXPECT_LE(recorded, 4096);
  EXPECT_EQ(buffer_->dropped(), static_cast<uint64_t>(5000 - recorded));
  EXPECT_EQ(Drain().size(), static_cast<size_t>(recorded));
}

}  // namespace
}  // namespace ctxprof
