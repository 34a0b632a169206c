#include "profiler/sampler/sample_buffer.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace ctxprof {
namespace {

// The buffer, or nullptr after a test failure that says why it could not be created.
std::unique_ptr<SampleBuffer> MakeBuffer(uint32_t slots, int depth) {
  StatusOr<std::unique_ptr<SampleBuffer>> created = SampleBuffer::Create(slots, depth);
  EXPECT_TRUE(created.ok()) << created.status().message();
  return created.ok() ? std::move(created.value()) : nullptr;
}

TEST(SampleBufferTest, FullBufferDropsAndCounts) {
  std::unique_ptr<SampleBuffer> buffer = MakeBuffer(16, kDefaultStackDepth);
  ASSERT_NE(buffer, nullptr);
  for (int i = 0; i < 16; ++i) {
    SampleRecord* record = buffer->TryClaim();
    ASSERT_NE(record, nullptr) << i;
    record->tid = i;
    record->frame_count = 0;
    buffer->Publish(record);
  }
  EXPECT_EQ(buffer->TryClaim(), nullptr);  // every slot is ready, none free
  std::set<int> seen;
  EXPECT_EQ(buffer->Drain([&](const SampleRecord& r) { seen.insert(r.tid); }), 16u);
  EXPECT_EQ(seen.size(), 16u);
  EXPECT_NE(buffer->TryClaim(), nullptr);  // freed by the drain
}

// peak_drain is the most records one drain consumed: how close the buffer came to full.
TEST(SampleBufferTest, PeakDrainKeepsTheLargestDrain) {
  std::unique_ptr<SampleBuffer> buffer = MakeBuffer(16, kDefaultStackDepth);
  ASSERT_NE(buffer, nullptr);
  auto publish = [&buffer](int count) {
    for (int i = 0; i < count; ++i) {
      SampleRecord* record = buffer->TryClaim();
      ASSERT_NE(record, nullptr) << i;
      record->frame_count = 0;
      buffer->Publish(record);
    }
  };
  EXPECT_EQ(buffer->peak_drain(), 0u);
  publish(5);
  EXPECT_EQ(buffer->Drain([](const SampleRecord&) {}), 5u);
  EXPECT_EQ(buffer->peak_drain(), 5u);
  publish(2);
  EXPECT_EQ(buffer->Drain([](const SampleRecord&) {}), 2u);
  EXPECT_EQ(buffer->peak_drain(), 5u) << "a smaller drain leaves the peak";
  publish(9);
  EXPECT_EQ(buffer->Drain([](const SampleRecord&) {}), 9u);
  EXPECT_EQ(buffer->peak_drain(), 9u);
}

// Records published at the front while a drain is past them (a long drain) must not make the
// claims after the drain fail: the cursor is not sent back to slots that are still taken.
TEST(SampleBufferTest, ClaimsAfterADrainSkipTheFrontPublishedDuringIt) {
  std::unique_ptr<SampleBuffer> buffer = MakeBuffer(256, kDefaultStackDepth);
  ASSERT_NE(buffer, nullptr);
  std::vector<SampleRecord*> claimed;
  for (int i = 0; i < 100; ++i) {
    claimed.push_back(buffer->TryClaim());
    ASSERT_NE(claimed.back(), nullptr);
    claimed.back()->frame_count = 0;
  }
  buffer->Publish(claimed[99]);
  // While the drain consumes the last record, producers publish the other 99 behind it.
  EXPECT_EQ(buffer->Drain([&](const SampleRecord&) {
    for (int i = 0; i < 99; ++i) buffer->Publish(claimed[i]);
  }),
            1u);
  SampleRecord* next = buffer->TryClaim();
  ASSERT_NE(next, nullptr) << "a claim failed with 157 free slots";
  next->frame_count = 0;
  buffer->Publish(next);
  EXPECT_EQ(buffer->dropped(), 0u);
  EXPECT_EQ(buffer->Drain([](const SampleRecord&) {}), 100u);
}

// A slot has room for exactly `depth` frames: records filled to the full depth in every slot
// keep their own frames and header (no slot overlaps its neighbour), and the last slot's last
// frame is inside the mapping.
TEST(SampleBufferTest, SlotsHoldDepthFramesWithoutOverlap) {
  for (int depth : {1, 5, 128, kMaxStackDepth}) {
    std::unique_ptr<SampleBuffer> buffer = MakeBuffer(8, depth);
    ASSERT_NE(buffer, nullptr);
    for (int slot = 0; slot < 8; ++slot) {
      SampleRecord* record = buffer->TryClaim();
      ASSERT_NE(record, nullptr) << "depth " << depth << " slot " << slot;
      record->tid = slot;
      record->frame_count = static_cast<uint32_t>(depth);
      for (int i = 0; i < depth; ++i) {
        record->frames[i] = {static_cast<uint64_t>(slot) << 32 | static_cast<uint64_t>(i), i,
                             FrameKind::kNative};
      }
      buffer->Publish(record);
    }
    int intact = 0;
    buffer->Drain([&](const SampleRecord& record) {
      bool ok = record.frame_count == static_cast<uint32_t>(depth);
      for (int i = 0; ok && i < depth; ++i) {
        ok = record.frames[i].id ==
                 (static_cast<uint64_t>(record.tid) << 32 | static_cast<uint64_t>(i)) &&
             record.frames[i].bci == i;
      }
      intact += ok ? 1 : 0;
    });
    EXPECT_EQ(intact, 8) << "depth " << depth;
  }
}

// After a drain, claims restart at the first slot: a steady load keeps reusing a few warm
// slots instead of walking (and faulting in) the whole ring.
TEST(SampleBufferTest, ClaimsRestartAtTheFirstSlotAfterADrain) {
  std::unique_ptr<SampleBuffer> buffer = MakeBuffer(64, kDefaultStackDepth);
  ASSERT_NE(buffer, nullptr);
  SampleRecord* first = nullptr;
  for (int round = 0; round < 10; ++round) {
    for (int i = 0; i < 5; ++i) {
      SampleRecord* record = buffer->TryClaim();
      ASSERT_NE(record, nullptr);
      if (round == 0 && i == 0) first = record;
      if (i == 0) EXPECT_EQ(record, first) << "round " << round;
      record->frame_count = 0;
      buffer->Publish(record);
    }
    EXPECT_EQ(buffer->Drain([](const SampleRecord&) {}), 5u);
  }
}

// The doorbell rings once per crossing of the high-water mark (half the slots) and on the first
// drop after a drain.
TEST(SampleBufferTest, RingsTheDoorbellAtHalfFullAndOnADrop) {
  Doorbell doorbell;
  StatusOr<std::unique_ptr<SampleBuffer>> created = SampleBuffer::Create(8, 4, &doorbell);
  ASSERT_TRUE(created.ok()) << created.status().message();
  SampleBuffer& buffer = *created.value();
  ASSERT_EQ(buffer.high_water(), 4u);
  const auto publish = [&buffer](int count) {
    for (int i = 0; i < count; ++i) {
      SampleRecord* record = buffer.TryClaim();
      ASSERT_NE(record, nullptr);
      record->frame_count = 0;
      buffer.Publish(record);
    }
  };
  const uint32_t start = doorbell.sequence();
  publish(3);
  EXPECT_EQ(doorbell.sequence(), start);
  publish(1);  // the fourth undrained record
  EXPECT_EQ(doorbell.sequence(), start + 1);
  publish(4);  // full, but the mark was crossed already
  EXPECT_EQ(doorbell.sequence(), start + 1);
  ASSERT_EQ(buffer.TryClaim(), nullptr);
  buffer.CountDrop();
  EXPECT_EQ(doorbell.sequence(), start + 2);
  buffer.CountDrop();  // rung already since the last drain
  EXPECT_EQ(doorbell.sequence(), start + 2);
  EXPECT_EQ(buffer.Drain([](const SampleRecord&) {}), 8u);
  publish(4);  // crosses again after the drain
  EXPECT_EQ(doorbell.sequence(), start + 3);
  buffer.CountDrop();  // the first drop since the drain
  EXPECT_EQ(doorbell.sequence(), start + 4);
  EXPECT_EQ(buffer.dropped(), 3u);
}

TEST(DoorbellTest, WaitReturnsAtOnceAfterARingAndWakesOnOne) {
  Doorbell doorbell;
  const uint32_t seen = doorbell.sequence();
  doorbell.Ring();
  doorbell.Wait(seen, std::chrono::hours(1));  // rung since `seen`: does not sleep
  const uint32_t now = doorbell.sequence();
  EXPECT_EQ(now, seen + 1);
  std::atomic<pid_t> waiter_tid{0};
  std::thread waiter([&] {
    waiter_tid = static_cast<pid_t>(syscall(SYS_gettid));
    doorbell.Wait(now, std::chrono::hours(1));
  });
  // Ring only once the waiter sleeps (its state in /proc is S: the futex wait is all it does
  // after publishing its tid), so the ring must wake it; a lost wake-up hangs the test.
  while (waiter_tid == 0) std::this_thread::yield();
  const std::string stat_path = "/proc/self/task/" + std::to_string(waiter_tid) + "/stat";
  while (true) {
    std::ifstream stat(stat_path);
    std::string pid, name, state;
    stat >> pid >> name >> state;
    if (state == "S") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  doorbell.Ring();
  waiter.join();
}

TEST(SampleBufferTest, RejectsDepthOutsideItsRange) {
  for (int depth : {0, -1, kMaxStackDepth + 1}) {
    const StatusOr<std::unique_ptr<SampleBuffer>> created = SampleBuffer::Create(8, depth);
    EXPECT_FALSE(created.ok()) << depth;
    EXPECT_EQ(created.status().code(), StatusCode::kInvalidArgument) << depth;
    const std::string& error = created.status().message();
    EXPECT_NE(error.find("depth=" + std::to_string(depth)), std::string::npos) << error;
  }
}

// Many producers and one consumer: every published record is consumed exactly once, intact,
// and every failed claim is counted as a drop.
TEST(SampleBufferTest, ConcurrentProducersNeverLoseOrTearRecords) {
  std::unique_ptr<SampleBuffer> buffer = MakeBuffer(64, kDefaultStackDepth);
  ASSERT_NE(buffer, nullptr);
  constexpr int kProducers = 4;
  constexpr int kPerProducer = 20000;
  std::atomic<int> published{0};
  std::atomic<int> dropped{0};
  std::atomic<bool> done{false};
  std::vector<int> consumed_per_producer(kProducers, 0);
  int torn = 0;
  std::thread consumer([&] {
    auto consume = [&](const SampleRecord& r) {
      // Each record carries its producer id in tid and a checksum pattern in its frames.
      if (r.frame_count != 3 || r.frames[0].id != r.ticks || r.frames[2].id != ~r.ticks) ++torn;
      ++consumed_per_producer[r.tid];
    };
    while (!done.load()) buffer->Drain(consume);
    buffer->Drain(consume);
  });
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (int i = 0; i < kPerProducer; ++i) {
        SampleRecord* r = buffer->TryClaim();
        while (r == nullptr) {  // full: count the drop, let the consumer run, try again
          buffer->CountDrop();
          ++dropped;
          std::this_thread::yield();
          r = buffer->TryClaim();
        }
        r->tid = p;
        r->ticks = static_cast<uint64_t>(p) << 32 | static_cast<uint64_t>(i);
        r->frame_count = 3;
        r->frames[0].id = r->ticks;
        r->frames[1].id = 0;
        r->frames[2].id = ~r->ticks;
        buffer->Publish(r);
        ++published;
      }
    });
  }
  for (auto& t : producers) t.join();
  done = true;
  consumer.join();
  int consumed = 0;
  for (int count : consumed_per_producer) consumed += count;
  EXPECT_EQ(torn, 0);
  EXPECT_EQ(published.load(), kProducers * kPerProducer);
  EXPECT_EQ(consumed, published.load());
  for (int count : consumed_per_producer) EXPECT_EQ(count, kPerProducer);
  EXPECT_EQ(buffer->dropped(), static_cast<uint64_t>(dropped.load()));
  printf("published %d dropped %d\n", published.load(), dropped.load());
}

}  // namespace
}  // namespace ctxprof
