// OpenTelemetry thread context (OTEP 4947): each thread's record and the exported TLS pointer
// `otel_thread_ctx_v1` that readers in other processes (the eBPF profiler, debuggers) follow.
//
// Record (byte offsets as the OTEP fixes them, host byte order): trace id 16 bytes and span id
// 8 bytes in W3C byte order (big-endian of our 64-bit halves), `valid` (1 = readable), trace
// flags (0: the API carries none), attrs_data_size (uint16), then entries {key = attribute slot,
// length, UTF-8 value (cut to 255 bytes at a character boundary)}; key i names the i-th entry of
// the process context's key map (otel_process_context.h). Values that do not fit are left out.
//
// Write protocol (style "fixed record per thread"): valid = 0, fields, valid = 1, each step
// behind a signal fence (atomic_signal_fence: a compiler barrier, no instruction). Readers read
// only while the owning thread is stopped (ptrace, a perf event on it, a signal on it), so
// program order on that thread is all they need. An empty context is valid = 0.
//
// Pointer: the owning thread stores its record's address in otel_thread_ctx_v1 once, after
// setting valid = 0, and stores nullptr before the record goes back to the pool (thread end).
// Records live in the context map's mapping (context_map.h), never unmapped, so the pointer is
// always null or a readable record. The variable is TLSDESC (global-dynamic, gnu2 dialect), as
// the OTEP asks of a dlopen'ed library; tests/otel checks the relocation.
//
// Thread safety: a record has one writer, its thread; Claim/Release lock the pool's mutex (once
// per thread). Nothing here runs in a signal handler.
#ifndef CTXPROF_CONTEXT_OTEL_THREAD_RECORD_H_
#define CTXPROF_CONTEXT_OTEL_THREAD_RECORD_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string_view>

#include "context/context_block.h"

namespace ctxprof {

inline constexpr size_t kOtelRecordBytes = 640;  // the OTEP's recommended maximum
inline constexpr size_t kOtelHeaderBytes = 28;

struct OtelThreadRecord {
  uint8_t trace_id[16];
  uint8_t span_id[8];
  uint8_t valid;
  uint8_t trace_flags;
  uint16_t attrs_data_size;
  uint8_t attrs_data[kOtelRecordBytes - kOtelHeaderBytes];
};
static_assert(sizeof(OtelThreadRecord) == kOtelRecordBytes, "no padding");
static_assert(offsetof(OtelThreadRecord, valid) == 24 &&
                  offsetof(OtelThreadRecord, attrs_data) == kOtelHeaderBytes,
              "OTEP 4947 offsets");

// Rewrites `record` (the calling thread's) to hold `context`, whose attribute slot i has the
// value `values[i]` (empty when unset).
void WriteOtelRecord(const ContextSnapshot& context, const std::string_view* values,
                     OtelThreadRecord* record);

// The fixed set of records, in the context map after the span logs. Record 0 is not handed out:
// its first word is the process-wide "publishing" flag the Java writer loads (kOtelFlagOffset).
class OtelRecordPool {
 public:
  static constexpr size_t kRecords = 16384;
  static constexpr size_t kBytes = kRecords * kOtelRecordBytes;

  // `memory`: kBytes of zeroed, page-aligned memory that is never unmapped.
  explicit OtelRecordPool(void* memory) : records_(static_cast<OtelThreadRecord*>(memory)) {}

  // Publishing on for the process (never turned off: readers keep seeing contexts).
  void Enable() { __atomic_store_n(&records_[0].valid, 1, __ATOMIC_RELEASE); }
  bool enabled() const { return __atomic_load_n(&records_[0].valid, __ATOMIC_ACQUIRE) != 0; }
  // Offset of the flag byte from base(), for the Java writer.
  static constexpr size_t kFlagOffset = offsetof(OtelThreadRecord, valid);
  char* base() { return reinterpret_cast<char*>(records_); }

  // The calling thread's record (valid = 0), published in otel_thread_ctx_v1; nullptr when all
  // are taken (counted). Release() clears the pointer, then frees the record.
  OtelThreadRecord* Claim();
  void Release(OtelThreadRecord* record);
  uint64_t claim_failures() const { return claim_failures_.load(std::memory_order_relaxed); }

 private:
  OtelThreadRecord* const records_;
  std::mutex mutex_;
  size_t next_ = 1;  // records below next_ were handed out at least once
  size_t free_[kRecords];
  size_t free_count_ = 0;
  std::atomic<uint64_t> claim_failures_{0};  // written under mutex_, read from anywhere
};

}  // namespace ctxprof

#endif  // CTXPROF_CONTEXT_OTEL_THREAD_RECORD_H_
