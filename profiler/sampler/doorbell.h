// Doorbell: wakes one waiting thread (the session's background thread) from anywhere, a signal
// handler included. The sample buffer rings it when it fills past its high-water mark
// (sample_buffer.h), so the buffer is drained when it needs to be rather than only on the
// background thread's timer; the session rings it to stop the thread or hand it a task.
//
// State: one 32-bit sequence number, the futex word.
//  * Ring() (any thread, async-signal-safe: one atomic add and one futex system call, no lock,
//    no allocation; errno is left to the caller, which in a signal handler saves it) increments
//    the sequence with release order and then wakes the waiter with FUTEX_WAKE.
//  * The waiter reads sequence() (acquire), then checks whatever it waits for (the buffer's
//    level, flags under its own mutex), then calls Wait(seen, timeout). FUTEX_WAIT sleeps only
//    while the word still equals `seen` (the kernel compares and sleeps atomically), so a ring
//    after the read returns at once: no wake-up is lost between the check and the sleep. The
//    acquire/release pair makes what the ringer wrote before Ring() visible to a waiter that
//    read the new sequence.
//  * Wait may also return early (a signal, a spurious wake-up): callers loop on their own
//    conditions, never on Wait's return.
// The sequence wraps after 2^32 rings, harmlessly: only equality with `seen` matters, and a
// waiter cannot miss exactly 2^32 rings between its read and its sleep.
#ifndef CTXPROF_PROFILER_SAMPLER_DOORBELL_H_
#define CTXPROF_PROFILER_SAMPLER_DOORBELL_H_

#include <atomic>
#include <chrono>
#include <cstdint>

namespace ctxprof {

class Doorbell {
 public:
  Doorbell() = default;
  Doorbell(const Doorbell&) = delete;
  Doorbell& operator=(const Doorbell&) = delete;

  // Async-signal-safe; may change errno (FUTEX_WAKE never fails on a valid private word).
  void Ring();
  uint32_t sequence() const { return sequence_.load(std::memory_order_acquire); }
  // Sleeps until a Ring() after the sequence was `seen`, or `timeout`, whichever comes first
  // (or earlier, see above). Returns at once when the sequence is no longer `seen`.
  void Wait(uint32_t seen, std::chrono::nanoseconds timeout);

 private:
  std::atomic<uint32_t> sequence_{0};
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SAMPLER_DOORBELL_H_
