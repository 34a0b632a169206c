// SampleBuffer: a fixed array of SampleRecord slots, filled by signal handlers (many producers)
// and drained by the one background thread (single consumer). Wait-free for the producer: a full
// buffer drops the sample and counts it; nothing ever waits.
//
// Slot states (one std::atomic<uint32_t> per slot):
//   kFree --(producer CAS, acquire)--> kWriting --(producer store, release)--> kReady
//   kReady --(consumer load, acquire; reads record)--> consumer store kFree (release)
// Only the producer whose CAS won writes the record, so claims are exclusive even between threads
// or a nested handler for another signal. The consumer reads only kReady slots: its acquire pairs
// with the producer's release, so the record is complete and never torn, and no producer touches
// the slot until the consumer's release of kFree, which pairs with the next producer's CAS.
//
// Claiming: a producer starts after the previous claim's start (relaxed fetch_add on a shared
// cursor, only a hint) and probes at most kMaxProbes slots, so the handler's cost is bounded
// whatever the size. A Drain sends the cursor back to slot 0 (warm, resident slots) only when its
// pass saw no slot being written and no claim since it began (a CAS from the cursor it started
// with): every slot is then free. Otherwise claims go on around the ring, past records published
// behind the drain's position, rather than running into them and dropping.
//
// Scanning: after a reset, every claim until the next Drain lands below cursor + kMaxProbes, so
// that Drain reads only those states (all of them after a wrap or a Drain without reset). A claim
// that took its hint before a reset and won its CAS after the pass still counts in `ready_`; a
// Drain that consumed fewer than `ready_` reads the rest, so such a record waits one Drain at most.
//
// High water: `ready_` counts published, undrained records (relaxed add in Publish before its
// release store, relaxed sub after the Drain's acquire loads; a trigger only). The Publish that
// reaches high_water() (half the slots) rings the doorbell given to Create, once per crossing; so
// does the first drop after a Drain (`drop_rung_`). Doorbell::Ring is async-signal-safe.
//
// Memory: one anonymous MAP_NORESERVE mapping. A slot holds a SampleRecord cut at the session's
// depth (stride: header plus depth frames, rounded to a cache line): every writer is bounded by
// depth and every reader stops at frame_count <= depth, so never copy a SampleRecord out of a
// slot by value. Sizes and the design's history: docs/SAMPLER.md, "The sample buffer".
//
// Async-signal-safety: TryClaim/Publish/CountDrop use only lock-free atomics on memory mapped
// before sampling starts and unmapped only after every handler has left (the session deactivates
// the handler before it frees the buffer: profiler/session/session.h).
#ifndef CTXPROF_PROFILER_SAMPLER_SAMPLE_BUFFER_H_
#define CTXPROF_PROFILER_SAMPLER_SAMPLE_BUFFER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "profiler/base/status.h"
#include "profiler/sampler/doorbell.h"
#include "profiler/sampler/sample.h"

namespace ctxprof {

class SampleBuffer {
 public:
  static constexpr uint32_t kMaxProbes = 16;

  // Maps `slots` records of up to `depth` frames each. Fails with kInvalidArgument when depth is
  // outside [1, kMaxStackDepth], with kUnavailable (and mmap's errno) when the mapping fails.
  // `doorbell` (may be null; must outlive the buffer) is rung at the high-water mark and on a
  // drop (see High water).
  static StatusOr<std::unique_ptr<SampleBuffer>> Create(uint32_t slots, int depth,
                                                        Doorbell* doorbell = nullptr);
  ~SampleBuffer();
  SampleBuffer(const SampleBuffer&) = delete;
  SampleBuffer& operator=(const SampleBuffer&) = delete;

  // Producer side (async-signal-safe). Returns a slot to fill, or nullptr when the probed slots
  // are all busy (the caller then calls CountDrop()). A claimed slot must be Publish()ed.
  SampleRecord* TryClaim();
  void Publish(SampleRecord* record);
  void CountDrop() {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    if (doorbell_ != nullptr && !drop_rung_.exchange(true, std::memory_order_relaxed)) {
      doorbell_->Ring();
    }
  }

  // Consumer side: calls consume(const SampleRecord&) for every published record and frees its
  // slot. Must be called by one thread at a time. Returns the number of records consumed.
  template <typename Consume>
  size_t Drain(Consume&& consume) {
    uint32_t start = cursor_.load(std::memory_order_relaxed);
    // See Scanning: after a reset, claims so far hold slots below start + probes.
    const uint32_t probes = slots_ < kMaxProbes ? slots_ : kMaxProbes;
    const uint32_t bound = claims_from_zero_ && start < slots_ - probes ? start + probes : slots_;
    bool saw_writing = false;
    size_t consumed = Scan(0, bound, consume, &saw_writing);
    if (bound < slots_ && ready_.load(std::memory_order_relaxed) > consumed) {
      consumed += Scan(bound, slots_, consume, &saw_writing);
    }
    published_.fetch_add(consumed, std::memory_order_relaxed);
    if (consumed > peak_drain_.load(std::memory_order_relaxed)) {
      peak_drain_.store(consumed, std::memory_order_relaxed);  // one consumer: no lost update
    }
    ready_.fetch_sub(static_cast<uint32_t>(consumed), std::memory_order_relaxed);
    drop_rung_.store(false, std::memory_order_relaxed);
    // Reuse the warm slots when every slot is free (see Claiming).
    claims_from_zero_ =
        !saw_writing && cursor_.compare_exchange_strong(start, 0, std::memory_order_relaxed,
                                                        std::memory_order_relaxed);
    return consumed;
  }

  uint32_t slots() const { return slots_; }
  uint32_t high_water() const { return slots_ / 2 > 0 ? slots_ / 2 : 1; }
  // Published records not drained yet (see High water); any thread, a hint that may be stale.
  uint32_t pending() const { return ready_.load(std::memory_order_relaxed); }
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  uint64_t consumed() const { return published_.load(std::memory_order_relaxed); }
  // The most records one Drain consumed: how close the buffer came to full (any thread, a hint).
  uint64_t peak_drain() const { return peak_drain_.load(std::memory_order_relaxed); }

 private:
  enum State : uint32_t { kFree = 0, kWriting = 1, kReady = 2 };

  SampleBuffer(char* records, size_t stride, std::atomic<uint32_t>* states, uint32_t slots,
               size_t mapped_bytes, Doorbell* doorbell)
      : records_(records),
        stride_(stride),
        states_(states),
        slots_(slots),
        mapped_bytes_(mapped_bytes),
        doorbell_(doorbell) {}

  SampleRecord* record(uint32_t index) const {
    return reinterpret_cast<SampleRecord*>(records_ + static_cast<size_t>(index) * stride_);
  }

  // Consumes and frees the ready records of slots [begin, end); notes a slot being written.
  template <typename Consume>
  size_t Scan(uint32_t begin, uint32_t end, Consume& consume, bool* saw_writing) {
    size_t consumed = 0;
    for (uint32_t i = begin; i < end; ++i) {
      const uint32_t state = states_[i].load(std::memory_order_acquire);
      if (state != kReady) {
        *saw_writing |= state == kWriting;
        continue;
      }
      consume(*record(i));
      states_[i].store(kFree, std::memory_order_release);
      ++consumed;
    }
    return consumed;
  }

  char* const records_;  // slot i's record starts at records_ + i * stride_
  const size_t stride_;
  std::atomic<uint32_t>* const states_;
  const uint32_t slots_;
  const size_t mapped_bytes_;
  Doorbell* const doorbell_;  // may be null
  std::atomic<uint32_t> cursor_{0};
  std::atomic<uint32_t> ready_{0};      // see High water
  std::atomic<bool> drop_rung_{false};  // a drop rang since the last Drain
  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> published_{0};
  std::atomic<uint64_t> peak_drain_{0};  // written by the consumer only
  bool claims_from_zero_ = true;         // consumer only: the last Drain reset the cursor
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SAMPLER_SAMPLE_BUFFER_H_
