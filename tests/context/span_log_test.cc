// SpanLog and SpanLogPool: what a thread's timed writes append (closed intervals that never
// overlap, with the context they had), the drop count and the place of the loss when the reader
// falls behind, and the log's return to the pool after its thread ends. The reader runs
// concurrently in ConcurrentReaderSeesEveryRecordOnce (CI runs this file under TSan too).
#include "context/span_log.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <memory>
#include <thread>
#include <vector>

#include "context/process_context.h"
#include "context/thread_context.h"

namespace ctxprof {
namespace {

struct Seen {
  int32_t tid;
  SpanRecord record;
  uint64_t lost_since;
};

std::vector<Seen> DrainAll(SpanLogPool* pool, uint64_t* dropped) {
  std::vector<Seen> seen;
  pool->Drain(
      [&](int32_t tid, const SpanRecord& record, uint64_t lost_since) {
        seen.push_back({tid, record, lost_since});
      },
      dropped);
  return seen;
}

SpanLogPool* NewPool() {
  // Kept for the whole run with their mappings, like the process pool (reachable: no leak).
  static auto* pools = new std::vector<std::unique_ptr<SpanLogPool>>();
  void* memory = mmap(nullptr, SpanLogPool::kBytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  EXPECT_NE(memory, MAP_FAILED);
  pools->push_back(std::make_unique<SpanLogPool>(memory));
  return pools->back().get();
}

ContextSnapshot SpanContext(uint64_t span_id) {
  ContextSnapshot context{};
  context.trace_id_low = 7;
  context.span_id = span_id;
  context.attributes[0] = static_cast<uint32_t>(span_id);
  return context;
}

TEST(SpanLogTest, AppendsClosedIntervalsOfNonEmptyContexts) {
  SpanLogPool* pool = NewPool();
  SpanLog* log = pool->Claim(1234);
  ASSERT_NE(log, nullptr);
  log->EndInterval(ContextSnapshot{}, 100);  // nothing open yet
  log->SetOpenBegin(100, 0);
  log->EndInterval(ContextSnapshot{}, 150);  // the empty context is not a span
  log->SetOpenBegin(150, 0);
  log->EndInterval(SpanContext(1), 200);
  log->SetOpenBegin(200, 42);  // a virtual thread mounts
  log->EndInterval(SpanContext(2), 260);
  log->SetOpenBegin(260, 0);
  uint64_t dropped = 0;
  std::vector<Seen> seen = DrainAll(pool, &dropped);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].record.owner, 0u);
  EXPECT_EQ(seen[1].record.owner, 42u);
  EXPECT_EQ(seen[0].tid, 1234);
  EXPECT_EQ(seen[0].record.begin_ticks, 150u);
  EXPECT_EQ(seen[0].record.end_ticks, 200u);
  EXPECT_EQ(seen[0].record.span_id, 1u);
  EXPECT_EQ(seen[0].record.attributes[0], 1u);
  EXPECT_EQ(seen[1].record.begin_ticks, 200u);
  EXPECT_EQ(seen[1].record.end_ticks, 260u);
  EXPECT_EQ(dropped, 0u);
  EXPECT_TRUE(DrainAll(pool, &dropped).empty());
}

TEST(SpanLogTest, FullLogDropsAndCounts) {
  SpanLogPool* pool = NewPool();
  SpanLog* log = pool->Claim(1);
  ASSERT_NE(log, nullptr);
  const uint64_t extra = 5;
  for (uint64_t i = 1; i <= SpanLog::kRecords + extra; i++) {
    log->SetOpenBegin(i * 10, 0);
    log->EndInterval(SpanContext(i), i * 10 + 5);
  }
  uint64_t dropped = 0;
  std::vector<Seen> seen = DrainAll(pool, &dropped);
  ASSERT_EQ(seen.size(), SpanLog::kRecords);
  EXPECT_EQ(seen.back().record.span_id, SpanLog::kRecords);  // the newest ones are dropped
  for (const Seen& record : seen) EXPECT_EQ(record.lost_since, 0u);
  EXPECT_EQ(dropped, extra);
  // Drained: there is room again, and the count is not reported twice. The first record after
  // the loss says where it began: the end of the last record kept.
  const uint64_t next = SpanLog::kRecords + extra + 1;
  for (uint64_t i = next; i < next + 2; i++) {
    log->SetOpenBegin(i * 10, 0);
    log->EndInterval(SpanContext(i), i * 10 + 5);
  }
  dropped = 0;
  seen = DrainAll(pool, &dropped);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].lost_since, SpanLog::kRecords * 10 + 5);
  EXPECT_EQ(seen[0].record.owner, kAfterLoss);
  EXPECT_EQ(seen[1].lost_since, 0u);
  EXPECT_EQ(seen[1].record.owner, 0u);
  EXPECT_EQ(dropped, 0u);
}

TEST(SpanLogTest, RetiredLogIsDrainedThenReused) {
  SpanLogPool* pool = NewPool();
  SpanLog* log = pool->Claim(5);
  log->SetOpenBegin(10, 0);
  SpanLogPool::Retire(log, SpanContext(3), 30);
  uint64_t dropped = 0;
  std::vector<Seen> seen = DrainAll(pool, &dropped);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].record.end_ticks, 30u);
  SpanLog* again = pool->Claim(6);
  EXPECT_EQ(again, log);
  EXPECT_EQ(again->open_begin.load(), 0u);  // a fresh log: nothing of the old thread's
  EXPECT_EQ(pool->claimed(), 1u);
}

TEST(SpanLogTest, PoolExhaustionIsCounted) {
  SpanLogPool* pool = NewPool();
  for (size_t i = 0; i < SpanLogPool::kLogs; i++) ASSERT_NE(pool->Claim(1), nullptr);
  EXPECT_EQ(pool->Claim(1), nullptr);
  EXPECT_EQ(pool->claim_failures(), 1u);
}

TEST(SpanLogTest, ConcurrentReaderSeesEveryRecordOnce) {
  SpanLogPool* pool = NewPool();
  constexpr uint64_t kSpans = 200000;
  std::atomic<bool> done{false};
  std::thread owner([&] {
    SpanLog* log = pool->Claim(42);
    for (uint64_t i = 1; i <= kSpans; i++) {
      log->SetOpenBegin(2 * i, 0);
      log->EndInterval(SpanContext(i), 2 * i + 1);
    }
    done.store(true);
  });
  uint64_t seen = 0, dropped = 0, last_span = 0;
  bool ordered = true, whole = true, losses_placed = true;
  auto visit = [&](int32_t, const SpanRecord& record, uint64_t lost_since) {
    seen++;
    ordered &= record.span_id > last_span;
    // Spans are missing before this one exactly when it says where they went missing.
    const bool after_gap = last_span != 0 && record.span_id != last_span + 1;
    losses_placed &= after_gap ? lost_since == 2 * last_span + 1 : lost_since == 0;
    last_span = record.span_id;
    whole &= record.begin_ticks == 2 * record.span_id &&
             record.end_ticks == 2 * record.span_id + 1 && record.attributes[0] == record.span_id &&
             (record.owner & ~kAfterLoss) == 0;
  };
  while (!done.load()) pool->Drain(visit, &dropped);
  owner.join();
  pool->Drain(visit, &dropped);
  EXPECT_EQ(seen + dropped, kSpans);
  EXPECT_TRUE(ordered);
  EXPECT_TRUE(whole);
  EXPECT_TRUE(losses_placed);
}

TEST(SpanLogTest, ThreadContextWritesAreTimed) {
  std::string error;
  ProcessContext* store = ProcessContext::Get(&error);
  ASSERT_NE(store, nullptr) << error;
  SpanLogPool& pool = store->map().span_logs();
  uint64_t dropped = 0;
  DrainAll(&pool, &dropped);
  pid_t tid = 0;
  uint64_t before = 0, after = 0;
  std::thread worker([&] {
    tid = CurrentTid();
    before = SpanTicks();
    ThreadContext::SetTrace(1, 2, 3);  // opens
    ThreadContext::SetTrace(1, 2, 4);  // ends span 3, opens span 4
    ThreadContext::Clear();            // ends span 4
    after = SpanTicks();
    ThreadContext::OnThreadEnd(tid);
  });
  worker.join();
  std::vector<Seen> seen = DrainAll(&pool, &dropped);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].tid, tid);
  EXPECT_EQ(seen[0].record.span_id, 3u);
  EXPECT_EQ(seen[1].record.span_id, 4u);
  EXPECT_LE(before, seen[0].record.begin_ticks);
  EXPECT_EQ(seen[0].record.end_ticks, seen[1].record.begin_ticks);
  EXPECT_LE(seen[1].record.end_ticks, after);

  ThreadContext::SetSpanTiming(false);
  std::thread untimed([] {
    ThreadContext::SetTrace(1, 2, 3);
    ThreadContext::Clear();
  });
  untimed.join();
  ThreadContext::SetSpanTiming(true);
  EXPECT_TRUE(DrainAll(&pool, &dropped).empty());
}

}  // namespace
}  // namespace ctxprof
