#include "profiler/sampler/sample_buffer.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

namespace ctxprof {

namespace {

constexpr size_t kCacheLine = 64;

size_t RoundUpToCacheLine(size_t bytes) { return (bytes + kCacheLine - 1) & ~(kCacheLine - 1); }

}  // namespace

StatusOr<std::unique_ptr<SampleBuffer>> SampleBuffer::Create(uint32_t slots, int depth,
                                                             Doorbell* doorbell) {
  if (depth < 1 || depth > kMaxStackDepth) {
    return Status::InvalidArgument("depth=" + std::to_string(depth) + ": use 1.." +
                                   std::to_string(kMaxStackDepth));
  }
  // States first, then the records, each starting on its own cache line so that handlers
  // filling neighbouring slots on different CPUs do not share a line.
  const size_t states_bytes = RoundUpToCacheLine(slots * sizeof(std::atomic<uint32_t>));
  const size_t stride = RoundUpToCacheLine(offsetof(SampleRecord, frames) +
                                           static_cast<size_t>(depth) * sizeof(RawFrame));
  const size_t bytes = states_bytes + static_cast<size_t>(slots) * stride;
  void* memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED) {
    const int err = errno;
    return Status::Unavailable("buffer=" + std::to_string(slots) + ": cannot map " +
                                   std::to_string(bytes) + " bytes for the sample buffer (" +
                                   strerror(err) + "); use a smaller buffer=",
                               err);
  }
  // Anonymous memory is zero: every state is kFree. Construct the atomics formally.
  auto* states = static_cast<std::atomic<uint32_t>*>(memory);
  for (uint32_t i = 0; i < slots; ++i) new (&states[i]) std::atomic<uint32_t>(kFree);
  char* records = static_cast<char*>(memory) + states_bytes;
  return std::unique_ptr<SampleBuffer>(
      new SampleBuffer(records, stride, states, slots, bytes, doorbell));
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
      return record(index);
    }
  }
  return nullptr;
}

void SampleBuffer::Publish(SampleRecord* record) {
  const size_t index = static_cast<size_t>(reinterpret_cast<char*>(record) - records_) / stride_;
  // Counted before the release store, so a Drain that consumes this record (its acquire load
  // pairs with the store) subtracts after this add: ready_ never goes below zero.
  const uint32_t ready = ready_.fetch_add(1, std::memory_order_relaxed) + 1;
  states_[index].store(kReady, std::memory_order_release);
  if (ready == high_water() && doorbell_ != nullptr) doorbell_->Ring();
}

}  // namespace ctxprof
