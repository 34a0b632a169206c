// SampleBuffer: a fixed array of SampleRecord slots, filled by signal handlers (many producers)
// and drained by the one background thread (single consumer). Lock-free and wait-free for the
// producer: a full buffer drops the sample and counts it; nothing ever waits.
//
// Slot states (one std::atomic<uint32_t> per slot):
//   kFree --(producer CAS, acquire)--> kWriting --(producer store, release)--> kReady
//   kReady --(consumer load, acquire; reads record)--> consumer store kFree (release)
//
// Who writes what:
//  * A producer (a signal handler on any thread) claims a slot with compare_exchange
//    kFree->kWriting. Only the claimer writes that record, then publishes it with a release store
//    of kReady. The CAS makes claims exclusive even when handlers on different threads (or a
//    nested handler for another signal on the same thread) race for the same slot.
//  * The consumer (one thread, see Drain) loads the state with acquire; kReady pairs with the
//    producer's release, so every byte of the record written before publication is visible.
//    After it has consumed the record it stores kFree with release, which pairs with the next
//    producer's acquiring CAS, so the next producer's writes cannot be reordered before the
//    consumer's reads.
//  * The consumer never sees a torn record: it reads only slots in kReady, which no producer
//    may touch until the consumer itself frees them.
// Claiming: a producer starts at the slot after the previous claim's start (a relaxed fetch_add
// on a shared cursor) and probes at most kMaxProbes slots, so the handler's cost is bounded
// regardless of the buffer size. A Drain ends by resetting the cursor to slot 0 (a relaxed
// store: the cursor is only a hint, and a claim racing with the reset merely starts elsewhere),
// so under a steady load the handlers keep reusing the first few slots, which stay in cache and
// resident; the rest of the ring is touched only by bursts between two drains. The reset happens
// only when the drain's pass saw no slot being written and no claim happened since the drain
// began (a compare-exchange from the cursor value it started with): then every slot is free. A
// record published behind the drain's position (its claim was in progress when the pass went by,
// or happened during a long pass: a drain consuming many records, or descheduled) stays ready
// until the next drain, and sending the claims back to slot 0 would make them run into such
// records and drop while the rest of the buffer is free. Without the reset, claims go on around
// the ring past them. (Walking the
// whole ring instead made every claim of a 2048-slot buffer touch a cold, often never-faulted
// slot; a per-thread start slot was tried first: one busy thread then filled its 16 slots and
// dropped while the rest of the buffer was free.)
//
// Scanning: a Drain need not read all the slot states (2,048 by default, ~10,000 instructions
// for a pass that, at a steady load, finds a few records near slot 0). A successful reset leaves
// every slot free and the cursor at 0 (the reset's CAS proves no claim came in between), so until
// the next Drain every claim took a hint below the cursor and a slot below hint + kMaxProbes:
// the next Drain reads the states below the cursor it loads + kMaxProbes, unless the cursor
// may have wrapped past the end (then, and after a Drain that did not reset, it reads them all).
// Claims after its load of the cursor may land beyond; the Drain leaves them to the next one,
// whose cursor covers them. One case escapes the bound: a claim that took its hint before a
// reset but won its slot's CAS after the pass went by (the reset then saw the slot free). Its
// Publish still counts it in `ready_`, so a Drain whose bounded pass consumed fewer records
// than `ready_` reads the rest of the states too, and the record waits one Drain at most (or a
// few, while a relaxed load of `ready_` lags).
//
// High water: `ready_` counts the published records not yet drained (a relaxed fetch_add in
// Publish before its release store of kReady, a relaxed fetch_sub of what a Drain consumed after
// its acquire loads of them, so the add of a record precedes its sub; only a trigger, never used
// to find records). The Publish that brings it to high_water() (half the slots) rings the doorbell
// given to Create (doorbell.h), once per crossing, so the background thread drains a filling buffer
// at once instead of at its next timer tick. The first drop after a Drain rings it too (the
// buffer, or the probed part of it, is full; `drop_rung_`, a relaxed exchange, spares further
// drops a system call each until the next Drain clears it). Both are async-signal-safe
// (Doorbell::Ring).
//
// Memory: slots are one anonymous mmap (MAP_NORESERVE). A slot holds a SampleRecord whose frames
// array is cut at the session's depth: SampleRecord declares kMaxStackDepth frames, but a slot
// has room for frames[0, depth) only (its stride is the header plus depth frames, rounded up to
// a cache line). That is sound because every writer is bounded by depth (the handler's walkers
// take it as their limit) and every reader stops at frame_count <= depth; never copy a
// SampleRecord out of a slot by value. At the default depth=128 a slot is ~2.1 KiB instead of
// 32 KiB, so buffer=2048 maps ~4.3 MiB, and resident memory stays below that.
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
