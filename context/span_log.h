// SpanLog: a thread's bounded log of closed context intervals ("spans"), with their real begin
// and end, and SpanLogPool: the fixed set of logs threads claim.
//
// What is logged: every write of a thread's context (span open and close, an attribute change,
// a virtual thread mounting) ends the interval of the context it replaces. If that context was
// not empty, the write appends one SpanRecord {begin, end, context} before writing the block,
// and then starts the next interval at the same instant (open_begin). So the records of one
// thread never overlap, and the interval still open is (open_begin, the block's context).
//
// Clock: TSC ticks (SpanTicks(), the samples' clock) unless bit 63 is set: then the value is
// CLOCK_MONOTONIC nanoseconds (kMonotonicFlag; a writer without a cheap TSC read, e.g. Java
// before 22 using System.nanoTime). The reader converts both to its clock.
//
// Concurrency: single producer (the owning thread) and single consumer (the profiler's writer
// thread) per log. The owner writes records at head % kRecords only while head - tail <
// kRecords (tail loaded with acquire, pairing with the reader's release store of tail after
// copying), then publishes head with a release store. The reader loads head with acquire
// (pairing with it), copies records [tail, head), and stores tail with release. So a record is
// never read while written nor overwritten while read: no torn record, no data race. When the
// log is full the record is dropped and `dropped` counts it (owner-written, relaxed); the owner
// also notes the head it could not pass (dropped_at, owner-only), and the next record it appends
// there carries kAfterLoss in its owner field: so the reader knows exactly where intervals are
// lost, between that record and the one before it, however its drains and the drops interleave.
// open_begin is stored inside the block's seqlock write, so a reader that brackets it with the
// block's sequence sees it together with the context it belongs to.
//
// Owner: a carrier thread runs other logical threads (a JVM's virtual threads). Each interval
// records the one that ran in it (ThreadContext::Mount); an owner's interval suspended on one
// carrier goes on when it mounts on another, so a record's begin may be another log's time.
//
// Memory bound: kLogs (4096) logs of kSpanLogBytes (84 KiB: 1024 records of 80 bytes and the
// header) = 336 MiB of address space reserved with the context map (MAP_NORESERVE); a thread
// touches its own log only when it writes timed contexts, at most 84 KiB of it. A thread that finds
// no free log writes untimed (counted in claim_failures()). A log returns to the pool when its
// thread ends (Retire) and the reader has drained it; a thread that exits without the end hook
// keeps its log.
#ifndef CTXPROF_CONTEXT_SPAN_LOG_H_
#define CTXPROF_CONTEXT_SPAN_LOG_H_

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "context/context_block.h"

namespace ctxprof {

struct SpanRecord {
  uint64_t begin_ticks;
  uint64_t end_ticks;
  uint64_t trace_id_high;
  uint64_t trace_id_low;
  uint64_t span_id;
  uint32_t attributes[kAttributeSlots];
  uint64_t owner;  // who ran in the interval: 0 = the log's thread, else ThreadContext::Mount's
                   // (a Java thread id, below 2^63); | kAfterLoss on the first record after drops
};
static_assert(sizeof(SpanRecord) == 80, "the Java writer uses this layout");

inline constexpr uint64_t kMonotonicFlag = uint64_t{1} << 63;
inline constexpr uint64_t kAfterLoss = uint64_t{1} << 63;

// The span clock's current value: the TSC where it can be read, else monotonic nanoseconds
// with kMonotonicFlag. Async-signal-safe.
uint64_t SpanTicks();

struct SpanLog {
  // A power of two (head % kRecords is a mask): 20 ms of a thread closing 50,000 spans a
  // second, between two of the writer's drains.
  static constexpr uint64_t kRecords = 1024;
  // Owner's cache line.
  std::atomic<uint64_t> head;        // records appended
  std::atomic<uint64_t> dropped;     // records dropped because the log was full
  std::atomic<uint64_t> dropped_at;  // 1 + the head when the last record was dropped; owner only
  std::atomic<uint64_t> open_begin;  // begin of the interval still open; 0 = none yet
  std::atomic<uint64_t> open_owner;  // who runs in it (SpanRecord::owner)
  std::atomic<int32_t> tid;          // the owner's kernel tid (set when claimed)
  std::atomic<uint32_t> state;       // kFree, kOwned, kRetired
  // Reader's cache line.
  alignas(64) std::atomic<uint64_t> tail;  // records consumed
  alignas(64) SpanRecord records[kRecords];

  enum : uint32_t { kFree = 0, kOwned = 1, kRetired = 2 };

  // Owner only: ends the interval of `current` (the block's context before this write) at
  // `now`, appending it unless it is empty or the log is full (then counted). Call it before
  // the block write, and SetOpenBegin(now, owner) inside it.
  void EndInterval(const ContextSnapshot& current, uint64_t now);
  void SetOpenBegin(uint64_t now, uint64_t owner) {
    open_begin.store(now, std::memory_order_relaxed);
    open_owner.store(owner, std::memory_order_relaxed);
  }
};

inline constexpr size_t kSpanLogBytes = 84 * 1024;
static_assert(sizeof(SpanLog) <= kSpanLogBytes, "a log fits its stride");

// The layout as numbers, for the Java writer (java/src/io/ctxprof/SpanLog.java).
struct SpanLogLayout {
  uint32_t log_bytes, records, record_bytes;
  uint32_t head_offset, dropped_offset, open_begin_offset, tail_offset, records_offset;
  uint32_t dropped_at_offset;
};
SpanLogLayout GetSpanLogLayout();

// Reads the interval `log` has open: its begin, its owner and the context of `block` (the same
// thread's), as one consistent set (open_begin and open_owner are written inside the block's
// seqlock write). False when writes kept the block busy. Safe from any thread.
bool ReadOpenInterval(const ContextBlock& block, const SpanLog& log, uint64_t* begin,
                      uint64_t* owner, ContextSnapshot* context);

class SpanLogPool {
 public:
  static constexpr size_t kLogs = 4096;
  static constexpr size_t kBytes = kLogs * kSpanLogBytes;

  // `memory`: kBytes of zeroed, page-aligned memory that is never unmapped.
  explicit SpanLogPool(void* memory) : logs_(static_cast<char*>(memory)) {}

  // A free log for the calling thread `tid`, or nullptr (counted) when all are taken. Takes a
  // lock: call it once per thread, not per write.
  SpanLog* Claim(pid_t tid);
  // The owner ends `log`'s open interval with `current` at `now` and gives it back; the reader
  // frees it once drained. Owner only.
  static void Retire(SpanLog* log, const ContextSnapshot& current, uint64_t now);

  SpanLog* log(size_t index) { return reinterpret_cast<SpanLog*>(logs_ + index * kSpanLogBytes); }
  char* base() { return logs_; }
  // Logs ever claimed: the reader scans [0, claimed()).
  size_t claimed() const { return claimed_.load(std::memory_order_acquire); }
  uint64_t claim_failures() const { return claim_failures_.load(std::memory_order_relaxed); }

  // Reader only (one thread). Calls visit(tid, record, lost_since) for every record appended
  // since the last Drain, log by log in append order, frees drained retired logs, and adds the
  // records dropped since the last Drain to *dropped. lost_since is 0, or, for a record marked
  // kAfterLoss, the end of the record before it (span ticks): the thread's intervals in
  // [lost_since, record.begin_ticks) are lost.
  template <typename Visit>
  void Drain(Visit&& visit, uint64_t* dropped);

 private:
  void Free(SpanLog* log);

  char* const logs_;
  std::atomic<size_t> claimed_{0};
  std::atomic<uint64_t> claim_failures_{0};
  std::mutex mutex_;  // guards claiming and freeing
  size_t free_[kLogs];
  size_t free_count_ = 0;
  // Reader only, per log: the drops counted so far; the end of the last record drained.
  uint64_t dropped_seen_[kLogs] = {};
  uint64_t last_end_[kLogs] = {};
};

template <typename Visit>
void SpanLogPool::Drain(Visit&& visit, uint64_t* dropped) {
  const size_t count = claimed();
  for (size_t i = 0; i < count; i++) {
    SpanLog* log = this->log(i);
    const uint32_t state = log->state.load(std::memory_order_acquire);
    if (state == SpanLog::kFree) continue;
    const int32_t tid = log->tid.load(std::memory_order_relaxed);
    const uint64_t head = log->head.load(std::memory_order_acquire);
    uint64_t tail = log->tail.load(std::memory_order_relaxed);
    for (; tail != head; tail++) {
      const SpanRecord& record = log->records[tail % SpanLog::kRecords];
      visit(tid, record, (record.owner & kAfterLoss) != 0 ? last_end_[i] : 0);
      last_end_[i] = record.end_ticks;
    }
    log->tail.store(tail, std::memory_order_release);
    const uint64_t drops = log->dropped.load(std::memory_order_relaxed);
    *dropped += drops - dropped_seen_[i];
    dropped_seen_[i] = drops;
    // Retired before the head we read: nothing more can be appended.
    if (state == SpanLog::kRetired) {
      dropped_seen_[i] = 0;
      last_end_[i] = 0;
      Free(log);
    }
  }
}

}  // namespace ctxprof

#endif  // CTXPROF_CONTEXT_SPAN_LOG_H_
