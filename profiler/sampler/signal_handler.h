// SignalHandler: the profiling signals' handler (signal= for the CPU engines, wallsignal= for
// wall), the only code of ours that runs in signal context (plus FaultGuard, StackWalker,
// PerfCallchain and PerfEngine::Rearm, which it calls). Each of our profiling signals is blocked
// while the handler runs for any of them (sa_mask holds every signal installed here), so a CPU
// signal samples the application, never our own handler's frames. Every step is reentrant anyway
// (slot claims are CAS, fault-guard regions nest, the context read is a pure read).
//
// One invocation, in order: save errno; count itself in flight; read the clock; for a perf signal,
// scan the event's ring (perf_callchain.h); return if no session is active (after the * steps);
// classify by si_code (perf POLL_IN: cpu, weight = the ring's overflows, none -> no sample;
// POLL_HUP: one-shot cpu; SI_TIMER: ctimer, 1 + si_overrun; SI_KERNEL: itimer, the process CPU not
// yet credited; SI_QUEUE from our pid: wall, weight and witness slot in si_value; anything else,
// e.g. a stray `kill -PROF`, is ignored); claim a slot (none: carry the weight, count a drop,
// tell the witness slot, return); copy the context block (seqlock, kSameThreadReadAttempts); copy
// the kernel frames (at most half of depth=); walk the stack; publish; leave a sleeping thread's
// witness (wall_witness.h); * empty the perf ring; * re-arm or turn one-shot (perf_engine.h);
// leave the in-flight count; restore errno. It never allocates, locks, does stdio, touches
// lazily-initialised TLS or throws.
//
// Dropped samples: a sample that finds no free slot is counted (SampleBuffer::CountDrop) and its
// weight carried, per thread and kind (cpu, wall), to the thread's next recorded sample of that
// kind (saturating at 2^32-1), so the thread's totals stay true. The carry lives in initial-exec
// TLS, touched only by the thread's own handler, and belongs to one activation (a counter Activate
// increments): the next session forgets it. Weight carried when a thread exits or the session
// stops is lost (the drop stays counted).
//
// Session state: Activate() stores the session (buffer, clock, context map, depth) into plain
// globals and then sets `enabled` (seq_cst). A handler increments `in_flight` (seq_cst) before
// it loads `enabled`; Deactivate() clears `enabled` and then waits until `in_flight` is zero.
// With sequentially consistent operations on both sides (a Dekker pattern) either the handler
// sees enabled == false, or Deactivate sees it in flight and waits for it; so once Deactivate
// returns no handler can touch the session's buffer, and it may be freed.
//
// Installation: the handler is installed once per signal number and never uninstalled (a queued
// signal arriving after stop must find a handler, or SIGPROF's default action would kill the
// host). Install() refuses a signal that already has a foreign handler; installing a new signal
// re-installs the earlier ones so that every one of them blocks all the others.
#ifndef CTXPROF_PROFILER_SAMPLER_SIGNAL_HANDLER_H_
#define CTXPROF_PROFILER_SAMPLER_SIGNAL_HANDLER_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "context/context_map.h"
#include "profiler/base/status.h"
#include "profiler/sampler/clock.h"
#include "profiler/sampler/sample_buffer.h"
#include "profiler/sampler/stack_walker.h"
#include "profiler/sampler/wall_witness.h"

namespace ctxprof {

// The JVM layer's Java stack walker (jni/java_stack_walker.h: AsyncGetCallTrace). Called in the
// signal handler on the interrupted thread with the signal's ucontext; it must be
// async-signal-safe. Writes at most `max_depth` Java frames (leaf first) into `frames` and
// returns how many; 0 when the thread has no Java stack to walk (not a Java thread, in native
// or VM code, no Java frames). A thread in Java code that the JVM cannot walk gets one
// FrameKind::kJavaUnwalkable frame naming the reason, not a native walk from a JIT pc.
using JavaStackWalk = int (*)(void* ucontext, RawFrame* frames, int max_depth);

// The JVM layer's virtual-thread probe (jni/virtual_threads.h): the java.lang.Thread id of the
// virtual thread mounted on the calling (carrier) thread, 0 when none. Called in the signal
// handler on the interrupted thread; it must be async-signal-safe.
using VirtualThreadProbe = uint64_t (*)();

// The JVM layer's code-cache test (jni/vm_stack_walker.h): true when `pc` is in the VM's
// generated code (interpreter, compiled methods, stubs). Async-signal-safe.
using JavaCodeProbe = bool (*)(uint64_t pc);

// Which walkers a sample uses when a JavaStackWalk is installed (options.h, cstack=).
enum class MixedStack : uint8_t {
  kJavaOnly,        // cstack=no: Java frames, or an empty stack
  kJavaElseNative,  // cstack=native: Java frames, or native frames when there are none
  // cstack=dwarf|fp (the default): the native frames from the interrupted pc up to the first
  // one in the VM's code (JavaCodeProbe), then the Java frames. So a Java native method's
  // native callees sit above it (Deflater.deflateBytesBytes -> deflate in libz), compiled Java
  // code gets no unnamed leaf, no Java frame appears twice, and the VM's thread start-up frames
  // (below the Java frames) never appear; a thread without Java frames gets its whole native
  // stack.
  kMixed,
};

struct HandlerSession {
  SampleBuffer* buffer;
  const Clock* clock;
  ContextMap* context_map;
  int depth;
  StackWalker::Method unwind;
  JavaStackWalk java_walk = nullptr;            // nullptr: native frames only (native programs)
  VirtualThreadProbe virtual_thread = nullptr;  // nullptr: every sample is its OS thread's
  JavaCodeProbe java_code = nullptr;            // kMixed: nullptr = no frame is Java code
  MixedStack mixed = MixedStack::kJavaElseNative;
  WallWitnessTable* wall_witnesses = nullptr;  // wall=: the witness slots (wall_witness.h)
};

// Optional instrumentation for benchmarks: the handler stores (publish ticks - entry ticks) of
// each published sample into `ticks[next++ % capacity]`. Lock-free (one fetch_add).
struct HandlerCostRecorder {
  uint64_t* ticks;
  uint32_t capacity;
  std::atomic<uint64_t> next{0};
};

class SignalHandler {
 public:
  // Installs the handler for `signal` unless it is already ours. Fails with kUnavailable (and
  // names the signal) when another handler is installed (SIG_DFL and SIG_IGN are replaced) or
  // sigaction fails. Thread-safe; not async-signal-safe.
  static Status Install(int signal);
  static void Activate(const HandlerSession& session);
  // Returns when no handler can still be using the session.
  static void Deactivate();
  static void SetCostRecorder(HandlerCostRecorder* recorder);

  // Counters since process start (relaxed; for reports).
  static uint64_t samples();
  static uint64_t ignored_signals();
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SAMPLER_SIGNAL_HANDLER_H_
