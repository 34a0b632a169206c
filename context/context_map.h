// ContextMap: thread id -> ContextBlock, in one mapping that is reserved once and never unmapped.
//
// Memory: Create() reserves capacity * 64 bytes with one mmap(PROT_READ|PROT_WRITE,
// MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE). Nothing is resident until a block is touched; a
// thread touches one 4 KiB page (shared with the 63 neighbouring tids). Untouched blocks read as
// zero, which is "no context".
//
// Capacity: DefaultCapacity() reads /proc/sys/kernel/pid_max and reserves kPidMaxHeadroom times
// that (at least kMinCapacity, at most kMaxCapacity = the kernel's PID_MAX_LIMIT on 64-bit), since
// pid_max can be raised while we run. A tid at or beyond the capacity gets no block: BlockFor()
// returns nullptr and counts it in out_of_range_lookups(). It never indexes outside the mapping.
//
// Lifetime: the mapping is never unmapped, and a ContextMap is never destroyed by the profiler
// (Global() is leaked on purpose). A thread that writes its block after it was "ended", or a
// reader that holds a block pointer across a session, can at worst misattribute a sample; it
// can never touch freed memory.
//
// Span logs: the same mapping holds, after the blocks, the SpanLogPool (span_log.h): another
// SpanLogPool::kBytes (304 MiB) of address space, touched only by threads that write timed spans.
// Then the OpenTelemetry thread records (otel_thread_record.h, 10 MiB), touched only with
// otelcontext=true.
//
// Thread lifecycle: OnThreadStart(tid) and OnThreadEnd(tid) clear the block through the writer
// protocol. They must run on the thread that owns `tid` (JVMTI ThreadStart/ThreadEnd and the
// native thread hooks do), because the seqlock allows one writer per block. Clearing at start
// covers a thread that died without OnThreadEnd: a recycled tid never inherits a dead thread's
// context.
//
// Thread safety: all methods are safe to call concurrently. BlockFor() and the counters are
// async-signal-safe (no allocation, no lock, no TLS).
#ifndef CTXPROF_CONTEXT_CONTEXT_MAP_H_
#define CTXPROF_CONTEXT_CONTEXT_MAP_H_

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "context/context_block.h"
#include "context/otel_thread_record.h"
#include "context/span_log.h"

namespace ctxprof {

class ContextMap {
 public:
  static constexpr size_t kMinCapacity = 1 << 17;  // 131,072 tids = 8 MiB of address space
  static constexpr size_t kMaxCapacity = 1 << 22;  // PID_MAX_LIMIT on 64-bit Linux
  static constexpr size_t kPidMaxHeadroom = 4;

  // capacity = clamp(pid_max * kPidMaxHeadroom, kMinCapacity, kMaxCapacity); kMaxCapacity when
  // pid_max cannot be read. `pid_max_path` is a parameter so tests can point it at a file.
  static size_t DefaultCapacity(const char* pid_max_path = "/proc/sys/kernel/pid_max");

  // Reserves a map for tids [0, capacity). Returns nullptr and sets *error (naming the size and
  // errno) when the reservation fails, e.g. under vm.overcommit_memory=2 or RLIMIT_AS.
  static ContextMap* Create(size_t capacity, std::string* error);

  // The process-wide map used by the profiler and the Java API: created on first call with
  // DefaultCapacity(). Returns nullptr (and keeps returning it) if the reservation failed; the
  // message is in GlobalError(). Not async-signal-safe on the first call; call it at start-up.
  static ContextMap* Global();
  static const std::string& GlobalError();

  ContextMap(const ContextMap&) = delete;
  ContextMap& operator=(const ContextMap&) = delete;

  size_t capacity() const { return capacity_; }

  // The first block (tid 0); the map is capacity() contiguous blocks. For a front end that
  // writes blocks in place from another language (the Java API maps the whole range once and
  // names each thread's block by its offset, java/src/io/ctxprof/BlockMemory.java); each block
  // still has a single writer, its own thread.
  ContextBlock* blocks() { return blocks_; }
  // The span logs, right after the last block (capacity() * 64 bytes after blocks()).
  SpanLogPool& span_logs() { return span_logs_; }
  // The OpenTelemetry thread records, right after the span logs.
  OtelRecordPool& otel_records() { return otel_records_; }

  // The block of `tid`, or nullptr (counted) when tid < 0 or tid >= capacity().
  ContextBlock* BlockFor(pid_t tid) {
    if (static_cast<size_t>(tid) < capacity_) return &blocks_[tid];
    out_of_range_lookups_.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }

  // Clear the block of the calling thread `tid` (see the lifecycle contract above).
  void OnThreadStart(pid_t tid);
  void OnThreadEnd(pid_t tid);

  uint64_t out_of_range_lookups() const {
    return out_of_range_lookups_.load(std::memory_order_relaxed);
  }

 private:
  ContextMap(ContextBlock* blocks, size_t capacity)
      : blocks_(blocks),
        capacity_(capacity),
        span_logs_(blocks + capacity),
        otel_records_(span_logs_.base() + SpanLogPool::kBytes) {}
  void ClearOwnBlock(pid_t tid);

  ContextBlock* const blocks_;
  const size_t capacity_;
  SpanLogPool span_logs_;
  OtelRecordPool otel_records_;
  std::atomic<uint64_t> out_of_range_lookups_{0};
};

// The calling thread's kernel tid, with a syscall (no TLS): safe in signal handlers.
pid_t CurrentTid();

// The calling thread's kernel tid from initial-exec TLS (a syscall only the first time in each
// thread, and again in a fork child). For per-write paths such as the C API and JNI setters,
// where a syscall would cost ~100x the write. Initial-exec TLS is allocated with the thread, so
// this is async-signal-safe too.
pid_t CachedTid();

}  // namespace ctxprof

#endif  // CTXPROF_CONTEXT_CONTEXT_MAP_H_
