// CpuTimerEngine (event=ctimer): one POSIX timer per thread on that thread's CPU-time clock
// (the kernel's MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED) clockid, which pthread_getcpuclockid
// returns for our own pthreads and which works for any tid of this process), notifying with
// SIGEV_THREAD_ID so the signal goes to that thread. si_code is SI_TIMER and si_overrun counts
// expirations merged into one signal (the handler records it as weight).
// Resolution: CPU timers are checked at the scheduler tick, so intervals below 1/HZ (4 ms at
// HZ=250) are rounded up in practice.
// Failure modes: timer_create EINVAL for a tid that has exited (not counted), EAGAIN when the
// RLIMIT_SIGPENDING/timer limit is reached (counted in failed_threads).
#ifndef CTXPROF_PROFILER_SAMPLER_CTIMER_ENGINE_H_
#define CTXPROF_PROFILER_SAMPLER_CTIMER_ENGINE_H_

#include <time.h>

#include <unordered_map>

#include "profiler/sampler/engine.h"

namespace ctxprof {

class CpuTimerEngine : public SamplingEngine {
 public:
  CpuTimerEngine(uint64_t interval_ns, int signal) : interval_ns_(interval_ns), signal_(signal) {}
  ~CpuTimerEngine() override { Stop(); }

  Engine kind() const override { return Engine::kCpuTimer; }
  const char* name() const override { return "ctimer"; }
  Status Start(bool* refused) override;
  void Stop() override;
  void AddThread(pid_t tid) override;
  void RemoveThread(pid_t tid) override;
  uint64_t failed_threads() const override { return failed_threads_; }

 private:
  // Creates and arms the timer of `tid`; returns 0 or an errno value.
  int CreateFor(pid_t tid, timer_t* timer);

  const uint64_t interval_ns_;
  const int signal_;
  std::unordered_map<pid_t, timer_t> timers_;
  uint64_t failed_threads_ = 0;
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SAMPLER_CTIMER_ENGINE_H_
