// PerfCallchain: the perf_event ring buffer of each sampled thread, read in the signal handler:
// the overflow records the kernel wrote since the last signal (how many: the weight of a
// continuous event's sample, perf_engine.h) and the kernel frames of the newest one, from its
// PERF_SAMPLE_CALLCHAIN part when kernel frames are on. Why a ring: without it the event must be
// re-armed by an ioctl after every sample (perf_engine.h); and our walkers see only user memory,
// while the kernel records the kernel stack it interrupted (exclude_callchain_user = 1) before it
// queues the signal, so the handler finds its own overflow's record there. Kernel frames go on
// the leaf side of the sample's user frames.
//
// Memory: one locked mapping per sampled thread (1 metadata + kDataPages data pages), made with
// the event (PerfEngine::AddThread), unmapped before it is closed; limited by perf_event_mlock_kb
// and RLIMIT_MEMLOCK (a thread refused one is sampled one-shot, without kernel frames). The chain
// is capped at kMaxKernelFrames so a data page holds the newest record; sizes: docs/SAMPLER.md.
//
// Ring contract (linux/perf_event.h, "mmap control page"): the kernel writes a record at data_head,
// then advances data_head after a write barrier, never past data_tail + data size (a record that
// does not fit is dropped and later reported by PERF_RECORD_LOST). We load data_head with acquire
// (every record below it is complete), read [data_tail, data_head), then store data_tail with
// release (our reads finish before the kernel reuses the space). Offsets are 64-bit counters that
// never wrap, masked by the power-of-two data size; records are 8-byte aligned, so each 8-byte
// word is contiguous even when a record wraps.
//
// Which records belong to a signal: all written since the previous signal's read, including
// overflows while the signal was blocked or pending: Unread counts them as the sample's weight.
// Kernel frames come from the newest PERF_RECORD_SAMPLE, and none when a PERF_RECORD_LOST follows
// it (rather than an older chain). Every perf signal consumes the ring (Unread's destructor).
//
// Publication (slots indexed by the event's fd, which the signal carries in si_fd): Attach maps
// and checks the ring, then publishes (tid, mapping), the mapping pointer last (seq_cst). A reader
// increments the slot's `readers` (seq_cst) before it loads the mapping (seq_cst) and decrements
// it (release) when done; Detach clears the mapping (seq_cst), then waits for `readers` to be zero
// (acquire) before it unmaps. A Dekker pattern: either the reader sees no mapping or Detach waits
// for it, so no handler reads an unmapped ring. A reader uses the ring only when the slot's tid is
// its own (an fd reused by another thread's event reads nothing). CPU handlers never nest
// (signal_handler.h), so each ring has one reader at a time. No FaultGuard is needed: the ring is
// mapped while a reader is counted, and every position is masked into the checked data area.
//
// Thread safety: Configure, Attach and Detach run on the session's control or background thread
// (one at a time per fd); Unread is async-signal-safe (no allocation, lock, system call or TLS).
#ifndef CTXPROF_PROFILER_SAMPLER_PERF_CALLCHAIN_H_
#define CTXPROF_PROFILER_SAMPLER_PERF_CALLCHAIN_H_

#include <linux/perf_event.h>
#include <sys/types.h>

#include <cstdint>

#include "profiler/sampler/sample.h"

namespace ctxprof {

class PerfCallchain {
 public:
  static constexpr int kDataPages = 1;          // a power of two, as the kernel requires
  static constexpr int kMaxKernelFrames = 127;  // the kernel's default perf_event_max_stack
  static constexpr int kMaxFd = 1 << 16;        // events with higher fds get no kernel frames

  // Asks the kernel for kernel callchains in `attr` (user frames excluded: our walkers take them).
  static void Configure(perf_event_attr* attr);

  // Maps the ring of `fd` (an event of thread `tid`, with Configure for kernel frames) and
  // publishes it.
  // 0, or -errno: the mmap's (EPERM/ENOMEM over the locked-memory limit), EBADF for an fd at or
  // above kMaxFd, EPROTO when the kernel's layout is not the one asked for.
  static int Attach(int fd, pid_t tid);
  // Unpublishes and unmaps the ring of `fd`, if any; returns when no handler reads it. Call
  // before closing `fd`.
  static void Detach(int fd);

  // In the handler of thread `tid`, for the signal of event `fd`: the ring's unread records,
  // from construction (which scans them) to destruction (which consumes them all, whether or not
  // a sample was taken). Async-signal-safe; one per signal, on the handler's stack.
  class Unread {
   public:
    Unread(int fd, pid_t tid);
    ~Unread();
    Unread(const Unread&) = delete;
    Unread& operator=(const Unread&) = delete;

    // False when the event has no ring (never mapped, or being closed).
    bool has_ring() const { return page_ != nullptr; }
    // Overflows since the last signal's read: the PERF_RECORD_SAMPLE records plus the samples
    // that PERF_RECORD_LOST records report dropped (a full ring). 0 without a ring.
    uint32_t overflows() const { return overflows_; }
    // Writes the kernel frames of the newest sample (innermost first, FrameKind::kKernel; the
    // first is the interrupted pc, the others return addresses) into frames[0..max_frames) and
    // returns their count: 0 when the thread was interrupted in user mode, the records carry no
    // callchain (kernel frames off), or a PERF_RECORD_LOST follows the newest sample. Sets
    // *truncated when the chain had more frames.
    int KernelFrames(RawFrame* frames, int max_frames, bool* truncated) const;

   private:
    int fd_;
    perf_event_mmap_page* page_ = nullptr;
    uint64_t head_ = 0;
    uint64_t sample_ = 0;  // position of the newest usable sample record, head_ if none
    uint64_t sample_size_ = 0;
    uint32_t overflows_ = 0;
  };
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SAMPLER_PERF_CALLCHAIN_H_
