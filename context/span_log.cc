#include "context/span_log.h"

#include <time.h>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace ctxprof {

uint64_t SpanTicks() {
#if defined(__x86_64__)
  return __rdtsc();
#else
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);  // cannot fail for CLOCK_MONOTONIC with a valid pointer
  return kMonotonicFlag | (static_cast<uint64_t>(now.tv_sec) * 1000000000 + now.tv_nsec);
#endif
}

void SpanLog::EndInterval(const ContextSnapshot& current, uint64_t now) {
  const uint64_t begin = open_begin.load(std::memory_order_relaxed);
  if (begin == 0 || current.empty()) return;
  const uint64_t position = head.load(std::memory_order_relaxed);  // only the owner writes it
  if (position - tail.load(std::memory_order_acquire) >= kRecords) {
    dropped_at.store(position + 1, std::memory_order_relaxed);
    dropped.store(dropped.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return;
  }
  const bool after_loss = dropped_at.load(std::memory_order_relaxed) == position + 1;
  SpanRecord& record = records[position % kRecords];
  record.begin_ticks = begin;
  record.end_ticks = now;
  record.trace_id_high = current.trace_id_high;
  record.trace_id_low = current.trace_id_low;
  record.span_id = current.span_id;
  for (int i = 0; i < kAttributeSlots; i++) record.attributes[i] = current.attributes[i];
  record.owner = open_owner.load(std::memory_order_relaxed) | (after_loss ? kAfterLoss : 0);
  head.store(position + 1, std::memory_order_release);
}

bool ReadOpenInterval(const ContextBlock& block, const SpanLog& log, uint64_t* begin,
                      uint64_t* owner, ContextSnapshot* context) {
  for (int attempt = 0; attempt < kOtherThreadReadAttempts; attempt++) {
    const uint64_t before = block.sequence.load(std::memory_order_acquire);
    if (before & 1) continue;
    *begin = log.open_begin.load(std::memory_order_relaxed);
    *owner = log.open_owner.load(std::memory_order_relaxed);
    if (ReadBlock(block, context, 1) != ReadStatus::kConsistent) continue;
    // Keeps the loads above ahead of the re-check, as in ReadBlock.
    std::atomic_thread_fence(std::memory_order_acquire);
    if (block.sequence.load(std::memory_order_relaxed) == before) return true;
  }
  return false;
}

SpanLogLayout GetSpanLogLayout() {
  return SpanLogLayout{
      static_cast<uint32_t>(kSpanLogBytes),
      static_cast<uint32_t>(SpanLog::kRecords),
      static_cast<uint32_t>(sizeof(SpanRecord)),
      static_cast<uint32_t>(offsetof(SpanLog, head)),
      static_cast<uint32_t>(offsetof(SpanLog, dropped)),
      static_cast<uint32_t>(offsetof(SpanLog, open_begin)),
      static_cast<uint32_t>(offsetof(SpanLog, tail)),
      static_cast<uint32_t>(offsetof(SpanLog, records)),
      static_cast<uint32_t>(offsetof(SpanLog, dropped_at)),
  };
}

SpanLog* SpanLogPool::Claim(pid_t tid) {
  std::lock_guard<std::mutex> lock(mutex_);
  SpanLog* claimed = nullptr;
  if (free_count_ > 0) {
    claimed = log(free_[--free_count_]);
  } else {
    const size_t next = claimed_.load(std::memory_order_relaxed);
    if (next == kLogs) {
      claim_failures_.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
    claimed = log(next);
    // The reader skips a log whose state is still kFree, so publishing the count first is safe.
    claimed_.store(next + 1, std::memory_order_release);
  }
  claimed->tid.store(tid, std::memory_order_relaxed);
  claimed->state.store(SpanLog::kOwned, std::memory_order_release);
  return claimed;
}

void SpanLogPool::Retire(SpanLog* log, const ContextSnapshot& current, uint64_t now) {
  log->EndInterval(current, now);
  log->state.store(SpanLog::kRetired, std::memory_order_release);
}

void SpanLogPool::Free(SpanLog* log) {
  log->head.store(0, std::memory_order_relaxed);
  log->tail.store(0, std::memory_order_relaxed);
  log->dropped.store(0, std::memory_order_relaxed);
  log->dropped_at.store(0, std::memory_order_relaxed);
  log->open_begin.store(0, std::memory_order_relaxed);
  log->open_owner.store(0, std::memory_order_relaxed);
  log->state.store(SpanLog::kFree, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mutex_);
  free_[free_count_++] = static_cast<size_t>((reinterpret_cast<char*>(log) - logs_) /
                                             static_cast<ptrdiff_t>(kSpanLogBytes));
}

}  // namespace ctxprof
