// PerfEngine (event=cpu): one perf_event per thread, PERF_TYPE_SOFTWARE /
// PERF_COUNT_SW_CPU_CLOCK with sample_period = interval in nanoseconds of the thread's CPU time.
//
// Signal routing: fcntl(F_SETOWN_EX, {F_OWNER_TID, tid}) + F_SETSIG(signal) + O_ASYNC, so each
// overflow signals exactly the thread that consumed the CPU, with si_code POLL_IN/POLL_HUP and
// si_fd = the event's fd. The event is created disabled and armed for one overflow with
// PERF_EVENT_IOC_REFRESH 1; the handler re-arms it (Rearm) after taking the sample, so a slow
// handler can never be re-entered by its own event.
// Kernel note: Linux 6.16-6.17 had a bug in the REFRESH path; this machine runs 6.18 (see
// docs/SAMPLER.md). Without a hardware PMU only software clocks exist, which is all we use.
//
// Failure modes of perf_event_open: EACCES/EPERM (perf_event_paranoid, seccomp, capabilities),
// ENOENT/ENOSYS/EOPNOTSUPP (no perf support): Start() reports them as refused so the profiler
// falls back to ctimer. EMFILE/ENFILE at AddThread: that thread is not sampled, counted.
//
// Kernel frames (kernel_frames = true, perf_callchain.h): the event also records the kernel
// callchain of each overflow into a ring buffer mapped per thread (8 KiB), which the handler
// reads. They need kernel-mode sampling: when perf_event_open refuses it (perf_event_paranoid >= 2
// without CAP_PERFMON or CAP_SYS_ADMIN) the engine samples user mode only, as before, and
// kernel_frames_off() says why there are none. A thread whose ring cannot be mapped (the
// locked-memory limit) is sampled without kernel frames; when the probe's at Start cannot, no
// thread gets them.
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

  // Async-signal-safe: re-arms our event `fd` for one more overflow.
  static void Rearm(int fd);

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
  std::unordered_map<pid_t, int> fds_;
  uint64_t failed_threads_ = 0;
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SAMPLER_PERF_ENGINE_H_
