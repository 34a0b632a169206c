// StackWalker: native frames of an interrupted thread, from the signal's ucontext.
//
// Three methods (option unwind=):
//  * kDwarf (default): our own walker on unwind tables compiled from each loaded object's
//    .eh_frame off the signal path (cfi_table.h, cfi_registry.h). Correct through code without
//    frame pointers (Debian's libc and libstdc++, -O2 libraries, the vDSO), through PLT stubs
//    and through signal frames (a handler interrupted by the other profiling signal). ~15 ns a
//    frame once the tables are in cache; no system call, lock or allocation. The walk ends,
//    reported truncated, at a pc that no scanned object covers (JIT code; a library loaded since
//    the last scan, which the next RefreshTables finds), at CFI it does not interpret, or at a
//    frame that does not move up the stack.
//  * kLibunwind: libunwind 1.6.2 local unwinding (UNW_INIT_SIGNAL_FRAME) on the same CFI. Kept
//    as an escape hatch and as the benchmark's reference; never used unless asked for. Cost:
//    libunwind takes its cache lock around every step with two rt_sigprocmask syscalls
//    (whatever the caching policy), microseconds per frame. On a cache miss it looks up
//    unwind tables with dl_iterate_phdr (glibc's recursive loader lock; a handler interrupting
//    dlopen on the same thread re-enters it); its global cache lock is taken with all signals
//    blocked (so a handler can never interrupt its holder on the same thread). Init(kLibunwind)
//    warms both up outside any handler and selects the global cache (no per-thread cache,
//    which would use lazily allocated TLS).
//  * kFramePointer: follows the rbp chain. ~2 ns per frame, but a function without a frame
//    pointer hides its caller (the leaf's caller when the leaf is such a function) or ends the
//    walk. Meant for code built with -fno-omit-frame-pointer (ours, JIT-compiled Java).
//
// Guarantees (async-signal-safety and crash-safety):
//  * No allocation by us; state lives on the handler's stack; frames go into the caller's fixed
//    array, at most `max_depth`.
//  * Every read of stack memory runs under FaultGuard (for kLibunwind: every read libunwind
//    makes while stepping): a fault (a corrupt frame pointer, a stack unmapped under us) ends
//    the walk, the frames found so far are kept and the walk is reported truncated. Registers
//    come only from MachineContext (the ucontext, or a signal frame's saved context).
#ifndef CTXPROF_PROFILER_SAMPLER_STACK_WALKER_H_
#define CTXPROF_PROFILER_SAMPLER_STACK_WALKER_H_

#include <cstdint>

#include "profiler/base/status.h"
#include "profiler/sampler/sample.h"

namespace ctxprof {

class StackWalker {
 public:
  enum class Method : uint8_t { kDwarf, kLibunwind, kFramePointer };

  // Call before sampling with `method` starts (thread-safe): installs FaultGuard; kDwarf builds
  // or refreshes the unwind tables of the loaded objects (CfiRegistry::Refresh: libjvm.so takes
  // ~0.1 s and 2.7 MB, so only the method that needs them pays); kLibunwind sets libunwind's
  // caching policy and runs one walk to finish its lazy initialisation (once per process).
  // Fails only when FaultGuard cannot be installed.
  static Status Init(Method method);
  // Rebuilds the unwind tables if libraries were loaded or unloaded since the last call. Off the
  // signal path; the session's background thread calls it every drain interval.
  static void RefreshTables();

  // Fills frames[0..n) (frames[0] = the interrupted pc) and returns n. Frames in the code of
  // the shared object that holds the profiler (libctxprof.so: its JVMTI callbacks and hooks run
  // on application threads) are left out, the walk going on through them: no sample shows a
  // frame of ours. (Linked into a native program, the profiler's code is the program's.) *truncated
  // is set when the walk hit max_depth with frames left, faulted, or could not find the next frame
  // (an unknown pc or CFI it cannot follow; kLibunwind: libunwind failed to step).
  // Async-signal-safe.
  static int Walk(void* ucontext, RawFrame* frames, int max_depth, bool* truncated,
                  Method method = Method::kDwarf);

 private:
  static int WalkDwarf(void* ucontext, RawFrame* frames, int max_depth, bool* truncated);
  static int WalkLibunwind(void* ucontext, RawFrame* frames, int max_depth, bool* truncated);
  static int WalkFramePointers(void* ucontext, RawFrame* frames, int max_depth, bool* truncated);
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SAMPLER_STACK_WALKER_H_
