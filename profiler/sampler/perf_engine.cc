#include "profiler/sampler/perf_engine.h"

#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "profiler/sampler/perf_callchain.h"

namespace ctxprof {
namespace {

constexpr int kMaxTrackedFd = 1 << 16;
std::atomic<uint64_t> g_our_fds[kMaxTrackedFd / 64];

void MarkOurs(int fd, bool ours) {
  if (fd < 0 || fd >= kMaxTrackedFd) return;
  const uint64_t bit = 1ull << (fd % 64);
  if (ours) {
    g_our_fds[fd / 64].fetch_or(bit, std::memory_order_relaxed);
  } else {
    g_our_fds[fd / 64].fetch_and(~bit, std::memory_order_relaxed);
  }
}

std::atomic<uint64_t> g_rearms{0};  // PerfEngine::rearms()

bool IsOurs(int fd) {
  if (fd < 0 || fd >= kMaxTrackedFd) return false;
  return (g_our_fds[fd / 64].load(std::memory_order_relaxed) >> (fd % 64)) & 1;
}

}  // namespace

int PerfEngine::OpenEvent(pid_t tid) const {
  perf_event_attr attr;
  memset(&attr, 0, sizeof(attr));
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_CPU_CLOCK;
  attr.sample_period = interval_ns_;
  attr.disabled = 1;
  attr.exclude_kernel = exclude_kernel_ ? 1 : 0;
  attr.exclude_hv = 1;
  attr.wakeup_events = 1;  // with a ring: a signal for every overflow (continuous events)
  if (kernel_frames_) PerfCallchain::Configure(&attr);
  return static_cast<int>(syscall(SYS_perf_event_open, &attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC));
}

int PerfEngine::OpenFor(pid_t tid) {
  int fd = OpenEvent(tid);
  if (fd < 0 && (errno == EACCES || errno == EPERM) && !exclude_kernel_) {
    // Unprivileged with perf_event_paranoid >= 2: only user-space counting is allowed, and
    // there is no kernel stack to record.
    const std::string refusal = strerror(errno);
    exclude_kernel_ = true;
    if (kernel_frames_) {
      kernel_frames_ = false;
      kernel_frames_off_ = "kernel frames off: perf_event_open refused kernel-mode sampling (" +
                           refusal +
                           "; it needs kernel.perf_event_paranoid <= 1 or CAP_PERFMON); CPU "
                           "time in the kernel is not sampled";
    }
    fd = OpenEvent(tid);
  }
  if (fd < 0 && kernel_frames_ && (errno == EINVAL || errno == E2BIG || errno == EOVERFLOW)) {
    // A kernel that does not take our callchain settings (too old, or a lowered limit): sample
    // without kernel frames rather than not at all.
    kernel_frames_ = false;
    kernel_frames_off_ = "kernel frames off: perf_event_open refused kernel callchains (" +
                         std::string(strerror(errno)) + ")";
    fd = OpenEvent(tid);
  }
  if (fd < 0) return -errno;
  // Before the event is armed, so that its first overflow already has a ring to go to.
  const int attached = rings_ ? PerfCallchain::Attach(fd, tid) : -ENOTSUP;
  if (attached != 0 && rings_) ring_error_ = -attached;
  f_owner_ex owner;
  owner.type = F_OWNER_TID;
  owner.pid = tid;
  if (fcntl(fd, F_SETOWN_EX, &owner) != 0 || fcntl(fd, F_SETSIG, signal_) != 0 ||
      fcntl(fd, F_SETFL, O_ASYNC) != 0) {
    const int saved = errno;
    Close(fd);
    return -saved;
  }
  MarkOurs(fd, true);
  // Continuous with a ring, one-shot without (the header says why).
  const unsigned long arm = attached == 0 ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_REFRESH;
  if (ioctl(fd, PERF_EVENT_IOC_RESET, 0) != 0 || ioctl(fd, arm, 1) != 0) {
    const int saved = errno;
    Close(fd);
    return -saved;
  }
  return fd;
}

void PerfEngine::Close(int fd) {
  ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
  MarkOurs(fd, false);
  PerfCallchain::Detach(fd);
  close(fd);
}

Status PerfEngine::Start(bool* refused) {
  // Probe on the calling thread: permissions, seccomp and kernel support show up here.
  const int fd = OpenFor(static_cast<pid_t>(syscall(SYS_gettid)));
  if (fd < 0) {
    const int err = -fd;
    *refused = err == EACCES || err == EPERM || err == ENOENT || err == ENOSYS ||
               err == EOPNOTSUPP || err == EINVAL;
    return Status::Unavailable(
        std::string("perf_event_open(PERF_COUNT_SW_CPU_CLOCK) failed: ") + strerror(err), err);
  }
  if (ring_error_ != 0) {
    // The probe's ring was refused: every thread's would be. Kernel frames are off, and every
    // event is one-shot (OpenFor); no more rings are tried.
    rings_ = false;
  }
  if (kernel_frames_ && ring_error_ != 0) {
    kernel_frames_ = false;
    const std::string fix = ring_error_ == EBADF
                                ? "the event's fd is beyond the handler's table of " +
                                      std::to_string(PerfCallchain::kMaxFd) + " fds"
                                : "raise kernel.perf_event_mlock_kb or RLIMIT_MEMLOCK";
    kernel_frames_off_ = "kernel frames off: the perf ring buffer could not be mapped (" +
                         std::string(strerror(ring_error_)) + "; " + fix + ")";
  }
  Close(fd);
  return Status();
}

void PerfEngine::Stop() {
  for (const auto& [tid, fd] : fds_) Close(fd);
  fds_.clear();
}

void PerfEngine::AddThread(pid_t tid) {
  if (fds_.count(tid) != 0) return;
  const int fd = OpenFor(tid);
  if (fd < 0) {
    // ESRCH: the thread exited between discovery and now; anything else is a real failure.
    if (fd != -ESRCH) ++failed_threads_;
    return;
  }
  fds_[tid] = fd;
}

void PerfEngine::RemoveThread(pid_t tid) {
  auto it = fds_.find(tid);
  if (it == fds_.end()) return;
  Close(it->second);
  fds_.erase(it);
}

void PerfEngine::Rearm(int fd) {
  if (!IsOurs(fd)) return;
  ioctl(fd, PERF_EVENT_IOC_REFRESH, 1);
  g_rearms.fetch_add(1, std::memory_order_relaxed);
}

uint64_t PerfEngine::rearms() { return g_rearms.load(std::memory_order_relaxed); }

void PerfEngine::Resume(int fd) {
  // The one-shot overflow used up the event's limit (0 again: unlimited); enabling it does not
  // set a new one.
  if (IsOurs(fd)) ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
}

}  // namespace ctxprof
