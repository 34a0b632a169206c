// FaultGuard: turns a SIGSEGV/SIGBUS raised inside a guarded region of a signal handler into a
// jump back to the start of that region, so a bad pointer met while walking a stack truncates
// the sample instead of killing the host.
//
// Use (in a signal handler, async-signal-safe):
//   sigjmp_buf jump;
//   sigjmp_buf* const outer = FaultGuard::Current();
//   if (sigsetjmp(jump, 0) != 0) { FaultGuard::Restore(outer); /* a read faulted */ }
//   FaultGuard::Arm(&jump);  ... reads ...  FaultGuard::Restore(outer);
// Regions nest: a handler for another signal (the wall signal and the CPU signal do not block
// each other) may interrupt a guarded region and guard its own reads; restoring `outer` when it
// leaves keeps the interrupted region guarded.
// savemask = 0 is enough and avoids a sigprocmask syscall per sample: the fault handler is
// installed with SA_NODEFER and an empty sa_mask, so jumping out of it leaves the signal mask
// exactly as it was in the guarded region.
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

#include <setjmp.h>

#include <cstdint>
#include <string>

namespace ctxprof {

class FaultGuard {
 public:
  // Installs the SIGSEGV and SIGBUS handlers once per process (later calls are no-ops).
  // Thread-safe. Returns false and sets *error when sigaction fails.
  static bool Install(std::string* error);

  // The innermost armed region of this thread, or nullptr.
  static sigjmp_buf* Current();
  static void Arm(sigjmp_buf* jump);
  // Ends the innermost region, making `outer` (what Current() returned before Arm) innermost.
  static void Restore(sigjmp_buf* outer);
  // Faults recovered since the process started.
  static uint64_t recovered_faults();

  // Copies `size` bytes from `address`; false when the read faulted. Async-signal-safe once
  // Install() has succeeded.
  static bool SafeRead(const void* address, void* out, size_t size);
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SAMPLER_FAULT_GUARD_H_
