// ITimerEngine (event=itimer): setitimer(ITIMER_PROF), one process-wide timer on the process's
// CPU time (user + system). The kernel sends the signal (si_code SI_KERNEL) to the thread that
// was running when the timer expired, so samples follow CPU time across threads without
// per-thread setup. Limits: only one ITIMER_PROF per process (we refuse to start if the host
// already armed one), HZ resolution like ctimer, and new threads need no registration.
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

 private:
  const uint64_t interval_ns_;
  bool running_ = false;
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SAMPLER_ITIMER_ENGINE_H_
