// ITimerEngine (event=itimer): setitimer(ITIMER_PROF), one process-wide timer on the process's
// CPU time (user + system). The kernel sends the signal (si_code SI_KERNEL) to the thread that
// was running when the timer expired, so samples follow CPU time across threads without
// per-thread setup. Limits: only one ITIMER_PROF per process (we refuse to start if the host
// already armed one), HZ resolution like ctimer, and new threads need no registration.
//
// Weight: the kernel checks the timer at each tick (HZ) and sends at most one signal per check,
// with no overrun count, so at an interval below the tick most expirations would be lost (at
// 1 ms and HZ=250, 3 of 4). Each sample therefore stands for the process CPU time not yet
// credited to a sample, in whole intervals (SampleWeight, called by the handler): the process
// CPU clock is read in the handler (clock_gettime(CLOCK_PROCESS_CPUTIME_ID), async-signal-safe:
// one system call per sample, at most HZ a second). State: one atomic, the CPU time credited so
// far; Start sets it (before the timer is armed, so before any handler reads it); handlers
// advance it with a compare-and-swap (relaxed: it orders nothing else, and concurrent handlers
// each credit what they took exactly once).
#ifndef CTXPROF_PROFILER_SAMPLER_ITIMER_ENGINE_H_
#define CTXPROF_PROFILER_SAMPLER_ITIMER_ENGINE_H_

#include "profiler/sampler/engine.h"

namespace ctxprof {

class ITimerEngine : public SamplingEngine {
 public:
  explicit ITimerEngine(uint64_t interval_ns) : interval_ns_(interval_ns) {}
  ~ITimerEngine() override { Stop(); }

  Engine kind() const override { return Engine::kITimer; }
  const char* name() const override { return "itimer"; }
  Status Start(bool* refused) override;
  void Stop() override;
  void AddThread(pid_t) override {}
  void RemoveThread(pid_t) override {}

  // Async-signal-safe: the intervals (>= 1) of process CPU time this sample stands for.
  static uint32_t SampleWeight();

 private:
  const uint64_t interval_ns_;
  bool running_ = false;
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SAMPLER_ITIMER_ENGINE_H_
