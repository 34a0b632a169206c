// SamplingEngine: what makes the kernel deliver the profiling signal to sampled threads.
//
// Lifecycle (all calls from the session's control threads, never from a signal handler; the
// profiler serialises them, so implementations need no locking of their own unless they run a
// thread): Start() once, then any number of AddThread()/RemoveThread(), then Stop() once, which
// releases every kernel resource (fds, timers, threads) before it returns. After Stop() no new
// signal is generated; a signal already queued may still arrive and is ignored by the handler.
#ifndef CTXPROF_PROFILER_SAMPLER_ENGINE_H_
#define CTXPROF_PROFILER_SAMPLER_ENGINE_H_

#include <sys/types.h>
#include <time.h>

#include <string>

#include "profiler/base/status.h"
#include "profiler/sampler/sample.h"

namespace ctxprof {

class SamplingEngine {
 public:
  virtual ~SamplingEngine() = default;
  // The engine that really runs (recorded in samples).
  virtual Engine kind() const = 0;
  virtual const char* name() const = 0;
  // Fails with kUnavailable, naming the system call and carrying its errno, when the engine
  // cannot run here. *refused is set when the failure means "not permitted/supported on this
  // system" (a reason to fall back to the next engine) rather than, say, a resource limit.
  virtual Status Start(bool* refused) = 0;
  virtual void Stop() = 0;
  // Per-thread engines arm `tid`; process-wide engines ignore these. Failures are counted.
  virtual void AddThread(pid_t tid) = 0;
  virtual void RemoveThread(pid_t tid) = 0;
  virtual uint64_t failed_threads() const { return 0; }
  // Why kernel frames were asked for but are not captured (after Start), "" when they are or
  // were not asked for. Only the cpu engine (PerfEngine) captures them.
  virtual std::string kernel_frames_off() const { return ""; }
};

// The CPU clock of thread `tid` of this process (include/linux/posix-timers.h: a per-thread
// CPUCLOCK_SCHED clock, sum_exec_runtime), for timer_create and clock_gettime.
inline clockid_t ThreadCpuClock(pid_t tid) {
  constexpr clockid_t kPerThread = 4;
  constexpr clockid_t kSched = 2;
  return static_cast<clockid_t>((~static_cast<unsigned>(tid)) << 3) | kPerThread | kSched;
}

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SAMPLER_ENGINE_H_
