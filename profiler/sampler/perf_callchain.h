// PerfCallchain: the perf_event ring buffer of each sampled thread, read in the signal handler:
// the overflow records the kernel wrote since the last signal (how many: the weight of a
// continuous event's sample, perf_engine.h) and the kernel frames of the newest one, from its
// PERF_SAMPLE_CALLCHAIN part when kernel frames are on.
//
// Why the ring, 1: without it the event must be re-armed by a system call after every sample
// (PERF_EVENT_IOC_REFRESH; ~10 us in this VM, perf_engine.h); with it, the kernel signals every
// overflow by itself (wakeup_events = 1), and the records say how many there were.
// Why the ring, 2: our own walkers see only user memory. When the cpu-clock event overflows while
// the thread runs in the kernel (a system call, a page fault), the kernel records the kernel
// stack it interrupted (attr.sample_type = PERF_SAMPLE_CALLCHAIN, exclude_callchain_user = 1:
// only the kernel part) into the event's ring buffer, and only then queues the signal, so the
// handler finds the record of its own overflow there. The kernel frames go before (leaf side of)
// the user frames of the same sample; user frames still come from our walkers.
//
// Memory: one mapping per sampled thread of 1 metadata page + kDataPages data pages (8 KiB with
// 4 KiB pages), made with the event (PerfEngine::AddThread) and unmapped before the event is
// closed. It is locked memory: unprivileged users are limited by perf_event_mlock_kb (516 KiB by
// default: ~64 threads) and RLIMIT_MEMLOCK; a thread whose mapping is refused is sampled without
// kernel frames, by a one-shot event. A record is 8 bytes without kernel frames, 16 + 8 per frame
// with them; Configure caps the kernel's chain at
// kMaxKernelFrames (or the lower perf_event_max_stack), ~1 KiB, so the data page holds the
// newest record with room to spare. The fd-indexed slot table is static: 16 bytes x kMaxFd
// (1 MiB of address space, touched only for the fds we use).
//
// Ring buffer contract (linux/perf_event.h, "mmap control page"). The kernel is the writer: it
// writes a record at data_head, then advances data_head (after a write barrier); it never writes
// past data_tail + data size, and when a record does not fit it drops it and later writes a
// PERF_RECORD_LOST record. We are the reader: load data_head with acquire (pairs with the
// kernel's barrier: every record below head is complete), read records in [data_tail, data_head),
// then store data_tail = data_head with release (our reads are done before the kernel may reuse
// the space). Offsets are 64-bit counters that never wrap; a position in the data area is the
// counter modulo the data size (a power of two), and every record is 8-byte aligned, so each
// 8-byte word is contiguous even when a record wraps around the end of the area.
//
// Which records belong to a signal: every record written since the previous signal's read. A
// one-shot event (PERF_EVENT_IOC_REFRESH 1) writes at most one between two signals; a
// continuous one (perf_engine.h) writes one per overflow, and overflows that happened while the
// signal was blocked or already pending (a standard signal does not queue) are read by the next
// signal: Unread counts them all as the sample's weight. Kernel frames come from the newest
// PERF_RECORD_SAMPLE, and none when a PERF_RECORD_LOST follows it (its own record was dropped:
// the sample gets no kernel frames rather than an older chain). Every perf signal consumes the
// ring (Unread's destructor), so records never accumulate.
//
// Publication (slots indexed by the event's fd, which the signal carries in si_fd). Attach maps
// the ring, checks the kernel's layout and then publishes (tid, mapping) in the fd's slot; the
// slot's mapping pointer is the publication (seq_cst store). A reader counts itself in the
// slot's `readers` (seq_cst) before it loads the mapping (seq_cst) and leaves (release) when
// done; Detach clears the mapping (seq_cst) and then waits until `readers` is zero (acquire)
// before it unmaps. Sequential consistency on both sides (a Dekker pattern): either the reader
// sees no mapping, or Detach sees the reader and waits for it, so no handler ever reads an
// unmapped ring. A reader uses the ring only when the slot's tid is its own thread's: a signal
// queued for a closed event whose fd was reused by another thread's event reads nothing. A
// thread's CPU signal handlers never nest (signal_handler.h), so each ring has one reader at a
// time, and the ring is never touched by another thread than its owner and Detach.
//
// Why no FaultGuard: the ring is memory we mapped and hold mapped while a reader is counted;
// head and tail come from the kernel but every position is masked into the data area, whose size
// Attach checked against the mapping, so no read can leave it.
//
// Thread safety: Configure, Attach and Detach run on the session's control or background thread
// (one at a time per fd); Unread is async-signal-safe (no allocation, lock, system call or TLS)
// and runs in the handler of the thread that owns the event.
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
