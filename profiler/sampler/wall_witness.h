// WallWitness: what a wall sample of a sleeping thread leaves behind so that the wall sampler can
// tell, at its next visits and without another signal, that the thread is still exactly where
// that sample saw it. Its wall time is then accounted for as repeats of that sample
// (wall_engine.h): an idle worker costs one CPU-clock read per tick, not a signal and a walk.
//
// The witness (written by the handler at the end of a wall sample it published, when the thread
// was interrupted in a system call): the thread's CPU clock; the interrupted sp and pc; a hash of
// the innermost kStackBytes of its stack from sp up (fewer where the mapping ends), which holds
// the return addresses and saved registers of the frames the sample walked (each word's low 32
// bits: a 32-bit value's slot keeps junk in its upper half, which differs when a signal made a
// timed wait start again); its context block's sequence (even; the owner increments it on every
// write); the sample's ticks, which repeats name.
// The thread counts as still there (StillThere) when, at a visit of the sampler:
//  * its CPU clock (the scheduler's sum_exec_runtime, exact to the nanosecond) has not moved
//    since the last visit that found it there: it executed nothing since; or
//  * it moved by less than kRunNanos in all since the witness (the signal's return, the system
//    call's restart, a short wake-up), AND the kernel shows it blocked in a system call at the
//    same sp and pc (/proc/self/task/TID/syscall), AND the kStackBytes above sp hash the same,
//    AND the context sequence is unchanged, AND its CPU clock did not move during these reads
//    (so it was there during all of them, not only at one).
// Either way the check yields a time at which the thread was provably there: its repeats' time,
// never the time they are written (by then the thread may have woken).
// So a thread that went from one wait to another (a different stack), changed its context, or
// ran for kRunNanos or more gets a signal again. What the check cannot tell: a thread that, with
// less than kRunNanos of CPU, left its wait and came back to the same sp and pc with the same
// innermost kStackBytes but different frames further out, or with words that differ in their
// upper halves only (return addresses a multiple of 4 GiB apart); its wait keeps the earlier outer
// frames. And at most kRunNanos of running per idle period count as waiting.
//
// Ownership and ordering (one slot per wall target; si_value of the wall signal names the slot):
//  * The sampler thread owns a slot whose state is not kPending: it sets `tid` and `state =
//    kPending` (release) before it sends the signal.
//  * The handler owns it while kPending: it checks `tid` against its own (a slot given to another
//    thread since is left alone), writes the witness fields, then stores kSleeping or kRan with
//    release. The sampler loads `state` with acquire before it reads them, so it sees a whole
//    witness or none. A slot left kPending (the signal was merged into one already pending, or
//    arrived while the session was stopping) is re-signalled by the sampler after a while.
// Every handler-side member is async-signal-safe (atomics, a guarded read, clock_gettime); the
// sampler-side check uses system calls and runs on the sampler thread only.
//
// Memory: kCapacity slots of 64 bytes (256 KiB), allocated with the session, before handlers are
// activated, and freed after they are deactivated, so a handler never touches freed memory.
// Threads beyond kCapacity are signalled every tick as before (no witness).
#ifndef CTXPROF_PROFILER_SAMPLER_WALL_WITNESS_H_
#define CTXPROF_PROFILER_SAMPLER_WALL_WITNESS_H_

#include <signal.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "context/context_block.h"
#include "profiler/sampler/clock.h"

namespace ctxprof {

// The sampler's own state of the checks of one thread's witness (sampler thread only).
struct WallCheck {
  // The CPU clock at the last check that found it there; UINT64_MAX: none since the witness
  // (reset whenever a signal asks for a new one).
  uint64_t cpu_checked = UINT64_MAX;
  uint64_t cpu_nanos = 0;    // the CPU clock at the last check, 0 when it could not be read
  uint64_t there_ticks = 0;  // a time at which the last check that found it there proved it
};

struct alignas(64) WallWitness {
  enum State : uint32_t {
    kNone = 0,      // no signal sent through this slot yet
    kPending = 1,   // a signal was sent; its handler has not finished
    kRan = 2,       // the handler ran and left no witness (running, no sample, or no context)
    kSleeping = 3,  // the handler left a witness (the fields below)
  };
  std::atomic<uint32_t> state{kNone};
  std::atomic<pid_t> tid{0};      // sampler: the thread this slot serves (relaxed; see Acquire)
  uint32_t stack_bytes = 0;       // handler: bytes hashed from sp
  uint64_t sp = 0;                // handler
  uint64_t pc = 0;                // handler
  uint64_t stack_hash = 0;        // handler
  uint64_t cpu_nanos = 0;         // handler: the thread's CPU clock when the witness was taken
  uint64_t context_sequence = 0;  // handler: ~0 when the thread has no context block
  uint64_t sample_ticks = 0;      // handler: the ticks of the wall sample it witnesses
};
static_assert(sizeof(WallWitness) == 64, "one cache line per slot");

class WallWitnessTable {
 public:
  static constexpr uint32_t kCapacity = 4096;
  static constexpr uint32_t kNoSlot = UINT32_MAX;
  // Stack bytes hashed from sp: the frames near the wait, where two waits differ.
  static constexpr uint32_t kStackBytes = 16 * 1024;
  // CPU a thread may use after its witness and still count as not having run: a signal's return
  // and the restart of the interrupted call cost a few microseconds.
  static constexpr uint64_t kRunNanos = 50 * 1000;

  // At most this many slots keep their thread's /proc/self/task/TID/syscall open between checks
  // (the first ones checked; a JVM's few periodic threads are those checked most).
  static constexpr uint32_t kMaxSyscallFds = 64;

  // Reads /proc/self/maps once, for the end of the process's initial stack.
  WallWitnessTable();
  ~WallWitnessTable();
  WallWitnessTable(const WallWitnessTable&) = delete;
  WallWitnessTable& operator=(const WallWitnessTable&) = delete;

  // Sampler thread only (under the wall engine's lock). kNoSlot when all are taken.
  uint32_t Acquire(pid_t tid);
  void Release(uint32_t slot);  // also closes the slot's kept syscall file
  WallWitness& at(uint32_t slot) { return slots_[slot]; }

  // The wall signal's si_value: the weight (intervals the sample stands for) and the slot.
  static sigval Encode(uint32_t weight, uint32_t slot);
  static void Decode(const sigval& value, uint32_t* weight, uint32_t* slot);

  // Handler side (async-signal-safe): finishes slot `slot` (any value: out of range is ignored)
  // for the wall sample the handler just took of thread `tid` (`published_ticks`: its ticks, 0
  // when it kept none), interrupted at `ucontext`; `syscall_end_pc` is the address after the system
  // call instruction it was interrupted in, 0 when it was not in one; `block` is the thread's
  // context block or null.
  void WitnessFromHandler(uint32_t slot, pid_t tid, uint64_t published_ticks,
                          uintptr_t syscall_end_pc, void* ucontext, const ContextBlock* block);

  // Sampler side: true when the thread of `witness` is still where its witness saw it (state
  // kSleeping and the checks in the header comment); then check->there_ticks is a time on
  // `clock` at which it provably was (a repeat stamped then shows the thread as it was at its
  // time) and check->cpu_checked its CPU clock. check->cpu_nanos: its CPU clock as read (0 when
  // unreadable: the thread exited). Not thread-safe (one scratch buffer): the sampler thread only.
  bool StillThere(const WallWitness& witness, const ContextBlock* block, const Clock& clock,
                  WallCheck* check);

 private:
  // Sampler side: true when the thread of `slot` (`tid`) is blocked in a system call, with the sp
  // and pc it entered it from; reads the slot's kept file, keeping one if fewer than
  // kMaxSyscallFds are kept (re-opening the path each time costs ~4 system calls and a path walk).
  bool BlockedAt(uint32_t slot, pid_t tid, uint64_t* sp, uint64_t* pc);

  std::unique_ptr<WallWitness[]> slots_;
  std::unique_ptr<int[]> syscall_fds_;   // under the wall engine's lock: per slot, -1 or an fd
  uint32_t open_syscall_fds_ = 0;        // under the wall engine's lock
  std::unique_ptr<uint64_t[]> scratch_;  // a copy of the stack bytes StillThere compares
  std::vector<uint32_t> free_;           // sampler thread only
  // The end of the initial thread's stack mapping ([stack]), 0 when unknown. The handler stops
  // its hash there: that thread's TLS is not above its stack, so nothing else bounds the read,
  // and a read past the mapping must not even fault (a fault in a handler that runs with SIGSEGV
  // blocked, as ThreadSanitizer runs deferred handlers, kills the process).
  uintptr_t initial_stack_end_ = 0;
};

// The CPU clock of thread `tid` of this process in nanoseconds; false when it cannot be read (the
// thread exited). One clock_gettime system call.
bool ThreadCpuNanos(pid_t tid, uint64_t* nanos);

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SAMPLER_WALL_WITNESS_H_
