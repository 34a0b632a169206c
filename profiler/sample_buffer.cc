#include "profiler/sample_buffer.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>

namespace ctxprof {

std::unique_ptr<SampleBuffer> SampleBuffer::Create(uint32_t slots, std::string* error) {
  // States first (their own cache lines), then the records, which are 64-byte aligned.
  const size_t states_bytes = (slots * sizeof(std::atomic<uint32_t>) + alignof(SampleRecord) - 1) &
                              ~(alignof(SampleRecord) - 1);
  const size_t bytes = states_bytes + static_cast<size_t>(slots) * sizeof(SampleRecord);
  void* memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED) {
    *error = "buffer=" + std::to_string(slots) + ": cannot map " + std::to_string(bytes) +
             " bytes for the sample buffer (" + strerror(errno) + "); use a smaller buffer=";
    return nullptr;
  }
  // Anonymous memory is zero: every state is kFree. Construct the atomics formally.
  auto* states = static_cast<std::atomic<uint32_t>*>(memory);
  for (uint32_t i = 0; i < slots; ++i) new (&states[i]) std::atomic<uint32_t>(kFree);
  auto* records = reinterpret_cast<SampleRecord*>(static_cast<char*>(memory) + states_bytes);
  return std::unique_ptr<SampleBuffer>(new SampleBuffer(records, states, slots, bytes));
}

SampleBuffer::~SampleBuffer() { munmap(states_, mapped_bytes_); }

SampleRecord* SampleBuffer::TryClaim() {
  const uint32_t hint = cursor_.fetch_add(1, std::memory_order_relaxed);
  const uint32_t probes = slots_ < kMaxProbes ? slots_ : kMaxProbes;
  for (uint32_t probe = 0; probe < probes; ++probe) {
    const uint32_t index = (hint + probe) % slots_;
    uint32_t expected = kFree;
    if (states_[index].load(std::memory_order_relaxed) == kFree &&
        states_[index].compare_exchange_strong(expected, kWriting, std::memory_order_acquire,
                                               std::memory_order_relaxed)) {
      return &records_[index];
    }
  }
  return nullptr;
}

void SampleBuffer::Publish(SampleRecord* record) {
  const size_t index = static_cast<size_t>(record - records_);
  states_[index].store(kReady, std::memory_order_release);
}

}  // namespace ctxprof
