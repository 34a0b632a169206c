// Compiled with -mtls-dialect=gnu2 on x86-64 (context/BUILD.bazel): otel_thread_ctx_v1 is then
// reached through a TLSDESC relocation, the model OTEP 4947 asks of a dlopen'ed library. It is
// touched from this file only (a second translation unit would make g++ add a TLS init call).
#include "context/otel_thread_record.h"

#include <atomic>
#include <cstring>
#include <string_view>

extern "C" {
__attribute__((visibility("default"))) __thread ctxprof::OtelThreadRecord* otel_thread_ctx_v1 =
    nullptr;
}

namespace ctxprof {

namespace {

void StoreBigEndian(uint64_t value, uint8_t* out) {
  for (int i = 7; i >= 0; i--, value >>= 8) out[i] = static_cast<uint8_t>(value);
}

// The OTEP's per-value bound (a uint8 length).
constexpr size_t kMaxValueBytes = 255;

// The longest prefix of `value` of at most `limit` bytes that does not end inside a UTF-8
// multi-byte sequence.
std::string_view CutUtf8(std::string_view value, size_t limit) {
  if (value.size() <= limit) return value;
  size_t end = limit;
  while (end > 0 && (static_cast<uint8_t>(value[end]) & 0xc0) == 0x80) end--;
  return value.substr(0, end);
}

}  // namespace

void WriteOtelRecord(const ContextSnapshot& context, const std::string_view* values,
                     OtelThreadRecord* record) {
  record->valid = 0;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  if (context.empty()) return;  // detached: valid stays 0
  StoreBigEndian(context.trace_id_high, record->trace_id);
  StoreBigEndian(context.trace_id_low, record->trace_id + 8);
  StoreBigEndian(context.span_id, record->span_id);
  record->trace_flags = 0;
  size_t size = 0;
  for (int slot = 0; slot < kAttributeSlots; slot++) {
    if (context.attributes[slot] == 0) continue;  // unset
    const std::string_view value = CutUtf8(values[slot], kMaxValueBytes);
    if (size + 2 + value.size() > sizeof(record->attrs_data)) continue;  // does not fit
    record->attrs_data[size] = static_cast<uint8_t>(slot);
    record->attrs_data[size + 1] = static_cast<uint8_t>(value.size());
    memcpy(record->attrs_data + size + 2, value.data(), value.size());
    size += 2 + value.size();
  }
  record->attrs_data_size = static_cast<uint16_t>(size);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  record->valid = 1;
}

OtelThreadRecord* OtelRecordPool::Claim() {
  OtelThreadRecord* record = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_count_ > 0) {
      record = &records_[free_[--free_count_]];
    } else if (next_ < kRecords) {
      record = &records_[next_++];
    } else {
      claim_failures_.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
  }
  record->valid = 0;  // a reused record still holds its last thread's context
  std::atomic_signal_fence(std::memory_order_seq_cst);
  otel_thread_ctx_v1 = record;
  return record;
}

void OtelRecordPool::Release(OtelThreadRecord* record) {
  otel_thread_ctx_v1 = nullptr;
  record->valid = 0;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  std::lock_guard<std::mutex> lock(mutex_);
  free_[free_count_++] = static_cast<size_t>(record - records_);
}

}  // namespace ctxprof
