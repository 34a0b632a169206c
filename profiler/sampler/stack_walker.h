// StackWalker: native frames of an interrupted thread, from the signal's ucontext.
//
// Two methods (option unwind=):
//  * kDwarf (default): libunwind local unwinding from the ucontext (UNW_INIT_SIGNAL_FRAME, so the
//    first frame is the interrupted pc, not a return address). Correct through code without frame
//    pointers (libc, -O2 libraries) as long as it has .eh_frame. Cost: libunwind 1.6.2 takes its
//    cache lock around every step with two rt_sigprocmask syscalls, ~0.5 us per frame here.
//  * kFramePointer: follows the rbp chain. ~10 ns per frame, but a function without a frame
//    pointer hides its caller (the leaf's caller when the leaf is such a function) or ends the
//    walk. Meant for code built with -fno-omit-frame-pointer (ours, JIT-compiled Java).
//
// Guarantees (async-signal-safety and crash-safety):
//  * No allocation by us; the cursor lives on the handler's stack; frames go into the caller's
//    fixed array, at most `max_depth`.
//  * Every memory read libunwind makes while stepping runs under FaultGuard: a fault (a corrupt
//    frame pointer, a stack unmapped under us) ends the walk, the frames found so far are kept
//    and the walk is reported truncated.
//  * libunwind's own behaviour that we rely on and cannot remove: on a cache miss it looks up
//    unwind tables with dl_iterate_phdr (glibc's recursive loader lock; a handler interrupting
//    dlopen on the same thread re-enters it) and its global cache lock is taken with all
//    signals blocked (so a handler can never interrupt its holder on the same thread). Init()
//    warms both up outside any handler and selects the global cache (no per-thread cache, which
//    would use lazily allocated TLS).
#ifndef CTXPROF_PROFILER_SAMPLER_STACK_WALKER_H_
#define CTXPROF_PROFILER_SAMPLER_STACK_WALKER_H_

#include <cstdint>

#include "profiler/sampler/sample.h"
#include "profiler/status.h"

namespace ctxprof {

class StackWalker {
 public:
  // Call once before sampling starts (thread-safe, idempotent): installs FaultGuard, sets
  // libunwind's caching policy and runs one walk to finish libunwind's lazy initialisation.
  // Fails only when FaultGuard cannot be installed.
  static Status Init();

  enum class Method : uint8_t { kDwarf, kFramePointer };

  // Fills frames[0..n) (frames[0] = the interrupted pc) and returns n. *truncated is set when the
  // walk hit max_depth with frames left, faulted, or (kDwarf) libunwind failed to step.
  // Async-signal-safe.
  static int Walk(void* ucontext, RawFrame* frames, int max_depth, bool* truncated,
                  Method method = Method::kDwarf);

 private:
  static int WalkDwarf(void* ucontext, RawFrame* frames, int max_depth, bool* truncated);
  static int WalkFramePointers(void* ucontext, RawFrame* frames, int max_depth, bool* truncated);
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SAMPLER_STACK_WALKER_H_
