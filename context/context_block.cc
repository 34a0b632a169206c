#include "context/context_block.h"

#include <cstring>

namespace ctxprof {

bool ContextSnapshot::empty() const {
  if (trace_id_high != 0 || trace_id_low != 0 || span_id != 0) return false;
  for (uint32_t id : attributes) {
    if (id != 0) return false;
  }
  return true;
}

bool ContextSnapshot::operator==(const ContextSnapshot& other) const {
  if (trace_id_high != other.trace_id_high || trace_id_low != other.trace_id_low ||
      span_id != other.span_id) {
    return false;
  }
  for (int i = 0; i < kAttributeSlots; i++) {
    if (attributes[i] != other.attributes[i]) return false;
  }
  return true;
}

namespace {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

}  // namespace

ReadStatus ReadBlock(const ContextBlock& block, ContextSnapshot* out, int max_attempts) {
  bool saw_write_in_progress = false;
  for (int attempt = 0; attempt < max_attempts; attempt++) {
    if (attempt > 0) CpuRelax();
    const uint64_t before = block.sequence.load(std::memory_order_acquire);
    if (before & 1) {
      saw_write_in_progress = true;
      continue;
    }
    out->trace_id_high = block.trace_id_high.load(std::memory_order_relaxed);
    out->trace_id_low = block.trace_id_low.load(std::memory_order_relaxed);
    out->span_id = block.span_id.load(std::memory_order_relaxed);
#pragma GCC unroll 8
    for (int i = 0; i < kAttributeSlots; i++) {
      out->attributes[i] = block.attributes[i].load(std::memory_order_relaxed);
    }
    // Keeps the field loads above ahead of the sequence re-check below.
    std::atomic_thread_fence(std::memory_order_acquire);
    if (block.sequence.load(std::memory_order_relaxed) == before) return ReadStatus::kConsistent;
  }
  *out = ContextSnapshot{};
  return saw_write_in_progress ? ReadStatus::kBusy : ReadStatus::kTorn;
}

}  // namespace ctxprof
