// PerfEngine (event=cpu): one perf_event per thread, PERF_TYPE_SOFTWARE /
// PERF_COUNT_SW_CPU_CLOCK with sample_period = interval in nanoseconds of the thread's CPU time.
//
// Signal routing: fcntl(F_SETOWN_EX, {F_OWNER_TID, tid}) + F_SETSIG(signal) + O_ASYNC, so each
// overflow signals exactly the thread that consumed the CPU, with si_fd = the event's fd.
//
// Arming. With the thread's ring buffer mapped (perf_callchain.h; wakeup_events = 1) the event is
// continuous: enabled once (PERF_EVENT_IOC_ENABLE), the kernel signals every overflow (POLL_IN)
// and the handler makes no system call besides the signal's return. Overflows while the signal is
// blocked or pending stay in the ring and the next signal counts them into its sample's weight
// (PerfCallchain::Unread::overflows), so none is lost; the handler's own CPU time counts toward
// the next overflow, as with the ctimer and itimer engines. Without a ring (its mapping refused:
// the locked-memory limit) the event is one-shot: created disabled, armed for one overflow with
// PERF_EVENT_IOC_REFRESH 1 (POLL_HUP) and re-armed by the handler (Rearm) after each sample. A
// continuous event whose signal finds more than one overflow is turned one-shot for one overflow
// by that same Rearm, so sampling never starves a thread; its POLL_HUP makes it continuous again
// (Resume). Linux 6.16-6.17 had a bug in the REFRESH path; use event=ctimer there. Only software
// clocks are used. Costs of the re-arm ioctl and the history: docs/SAMPLER.md, "Engines".
//
// Failure modes of perf_event_open: EACCES/EPERM (perf_event_paranoid, seccomp, capabilities),
// ENOENT/ENOSYS/EOPNOTSUPP (no perf support): Start() reports them as refused so the profiler
// falls back to ctimer. EMFILE/ENFILE at AddThread: that thread is not sampled, counted.
//
// Kernel frames (kernel_frames = true, perf_callchain.h): the event also records the kernel
// callchain of each overflow into the thread's ring buffer, which the handler reads. They need
// kernel-mode sampling: when perf_event_open refuses it (perf_event_paranoid >= 2 without
// CAP_PERFMON or CAP_SYS_ADMIN) the engine samples user mode only and kernel_frames_off() says
// why. A thread whose ring cannot be mapped is sampled without kernel frames, one-shot; when the
// probe's at Start cannot be mapped, no thread gets a ring.
//
// The handler side: Rearm(fd) runs in the signal handler; it re-arms only fds recorded in a
// lock-free bitmap of our open events (set after open, cleared before close, relaxed atomics: a
// stale bit can only make it ioctl a just-closed fd, which fails with EBADF or, if the number was
// reused within that window, ENOTTY for a non-perf file).
#ifndef CTXPROF_PROFILER_SAMPLER_PERF_ENGINE_H_
#define CTXPROF_PROFILER_SAMPLER_PERF_ENGINE_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <unordered_map>

#include "profiler/sampler/engine.h"

namespace ctxprof {

class PerfEngine : public SamplingEngine {
 public:
  PerfEngine(uint64_t interval_ns, int signal, bool kernel_frames = false)
      : interval_ns_(interval_ns), signal_(signal), kernel_frames_(kernel_frames) {}
  ~PerfEngine() override { Stop(); }

  Engine kind() const override { return Engine::kPerfCpuClock; }
  const char* name() const override { return "cpu"; }
  Status Start(bool* refused) override;
  void Stop() override;
  void AddThread(pid_t tid) override;
  void RemoveThread(pid_t tid) override;
  uint64_t failed_threads() const override { return failed_threads_; }
  std::string kernel_frames_off() const override { return kernel_frames_off_; }

  // Async-signal-safe: arms our event `fd` for one more overflow (a continuous event becomes
  // one-shot).
  static void Rearm(int fd);
  // Async-signal-safe: makes our event `fd`, whose one-shot overflow just fired, continuous again.
  static void Resume(int fd);
  // Re-arm ioctls (Rearm) the process made so far, for tests: one per sample of a one-shot event.
  static uint64_t rearms();

 private:
  // Opens and arms an event for `tid` (with its kernel-callchain ring when kernel frames are
  // on), retrying without what the kernel refuses; returns the fd or -errno.
  int OpenFor(pid_t tid);
  // perf_event_open with the current settings; the fd, or -1 with errno.
  int OpenEvent(pid_t tid) const;
  // Closes an event OpenFor made.
  static void Close(int fd);

  const uint64_t interval_ns_;
  const int signal_;
  bool exclude_kernel_ = false;
  bool kernel_frames_;             // asked for and still possible
  std::string kernel_frames_off_;  // why not, when asked for
  int ring_error_ = 0;             // the errno of the last ring that could not be mapped
  bool rings_ = true;              // false once the probe's ring was refused
  std::unordered_map<pid_t, int> fds_;
  uint64_t failed_threads_ = 0;
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SAMPLER_PERF_ENGINE_H_
