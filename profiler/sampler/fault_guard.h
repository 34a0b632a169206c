// FaultGuard: turns a SIGSEGV/SIGBUS raised while a signal handler reads memory it does not own
// into a "false" return, so a bad pointer met while walking a stack truncates the sample instead
// of killing the host.
//
// One idiom, two spellings:
//   FaultGuard::SafeRead(address, &out, size)   copy bytes; false if the read faulted
//   FaultGuard::Run(&Body, &state)              run Body(&state); false if it faulted
// Run is for code that reads foreign memory in many places (a stack walk, libunwind stepping):
// Body keeps everything it produces in `state` (memory the caller owns), so what it completed
// before a fault is still there when Run returns false. Body must not take locks or allocate (a
// fault abandons it midway) and must leave nothing half-updated that matters after a fault.
//
// Run saves a jump point (sigsetjmp without the signal mask: the fault handler is installed with
// SA_NODEFER and an empty sa_mask, so jumping out of it leaves the mask as it was, and no
// sigprocmask syscall is paid per sample) and arms it for the calling thread. Regions nest: a
// signal handler may interrupt a guarded region of other code (the profiling signals block each
// other, but a JVMTI callback's region, for one, can be interrupted) and guard its own reads; the
// outer region is re-armed when the inner one ends, whether it faulted or not.
//
// State: one pointer per thread in initial-exec TLS (`static __thread`, zero-initialised in the
// static TLS block, so touching it never allocates, even in a dlopen'ed library). Only the owning
// thread reads or writes it, from its own signal handlers.
//
// Faults outside a guarded region are the host's: they go to the handler that was installed
// before ours (called directly), or, if that was SIG_DFL/SIG_IGN, we restore SIG_DFL and return
// so the faulting instruction re-executes and the default action (core dump) happens as if we
// were not there.
#ifndef CTXPROF_PROFILER_SAMPLER_FAULT_GUARD_H_
#define CTXPROF_PROFILER_SAMPLER_FAULT_GUARD_H_

#include <cstddef>
#include <cstdint>

#include "profiler/base/status.h"

// Marks a function that reads memory we do not own, only ever under FaultGuard. The sanitizers'
// checks of such reads mean nothing (the memory is foreign by design), and for a wild address
// they fault inside the sanitizer's runtime, where no guard can recover: TSan computing the
// shadow of a kernel address taken from a stale register killed context_attribution_test.
#define CTXPROF_READS_FOREIGN_MEMORY __attribute__((no_sanitize("address", "thread"), noinline))

namespace ctxprof {

class FaultGuard {
 public:
  // Installs the SIGSEGV and SIGBUS handlers once per process (later calls are no-ops).
  // Thread-safe. Fails with kUnavailable (and the errno) when sigaction fails.
  static Status Install();

  // Runs body(state) with faults guarded; false when it faulted (body was abandoned at the
  // faulting read). Async-signal-safe once Install() has succeeded.
  static bool Run(void (*body)(void* state), void* state);

  // Copies `size` bytes from `address`; false when the read faulted. Async-signal-safe once
  // Install() has succeeded.
  static bool SafeRead(const void* address, void* out, size_t size);

  // The address of the calling thread's guard state (initial-exec TLS), which Run writes while
  // its region lasts: a reader of the thread's own stack bytes under the guard stops below it
  // (a glibc thread's static TLS sits just above its stack).
  static uintptr_t ThreadStateAddress();

  // Faults recovered since the process started.
  static uint64_t recovered_faults();
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SAMPLER_FAULT_GUARD_H_
