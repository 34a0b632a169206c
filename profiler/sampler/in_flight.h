// InFlight: how many threads are inside a section that uses a session's memory (the signal
// handler, a runtime event's callback), so that deactivating the session can wait until none is
// before the memory is freed.
//
// Who writes: each thread entering and leaving (seq_cst fetch_add and fetch_sub on its stripe).
// Who reads: the deactivating thread (Drain). The count is striped by tid over kStripes cache
// lines: every entry is a locked read-modify-write, and threads on different CPUs entering
// thousands of times a second each would otherwise move one line between their caches at every
// entry (the allocation callback's cost, docs/SAMPLER.md). A thread keeps the stripe it entered.
//
// The protocol, with an `enabled` flag the caller owns (all seq_cst): a thread increments its
// stripe, then loads `enabled`, and leaves at once if it is false. Deactivation stores false,
// then Drain reads each stripe until it reads 0. A thread inside loaded true, so its increment
// came before that load, the load before the store of false, and the store before Drain's read of
// its stripe: the read sees the increment until the thread leaves. A thread whose increment comes
// after that read loads false and never touches the session. Nested entries (a signal during a
// callback) add one each.
//
// Async-signal-safe: Enter and Leave are lock-free atomics on static memory.
#ifndef CTXPROF_PROFILER_SAMPLER_IN_FLIGHT_H_
#define CTXPROF_PROFILER_SAMPLER_IN_FLIGHT_H_

#include <time.h>

#include <atomic>
#include <cstdint>

namespace ctxprof {

class InFlight {
 public:
  static constexpr uint32_t kStripes = 16;

  // Counts the calling thread (kernel tid `tid`) in; returns the stripe to pass to Leave.
  std::atomic<int32_t>* Enter(int32_t tid) {
    std::atomic<int32_t>* stripe = &stripes_[static_cast<uint32_t>(tid) % kStripes].count;
    stripe->fetch_add(1, std::memory_order_seq_cst);
    return stripe;
  }
  static void Leave(std::atomic<int32_t>* stripe) {
    stripe->fetch_sub(1, std::memory_order_seq_cst);
  }
  // After the caller's store of enabled = false: returns when no thread is inside, sleeping
  // 100 µs between reads of a busy stripe.
  void Drain() const {
    for (const Stripe& stripe : stripes_) {
      while (stripe.count.load(std::memory_order_seq_cst) != 0) {
        const timespec pause = {0, 100 * 1000};
        nanosleep(&pause, nullptr);
      }
    }
  }

 private:
  struct alignas(64) Stripe {
    std::atomic<int32_t> count{0};
  };
  Stripe stripes_[kStripes];
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SAMPLER_IN_FLIGHT_H_
