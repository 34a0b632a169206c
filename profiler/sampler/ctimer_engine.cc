#include "profiler/sampler/ctimer_engine.h"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ctxprof {

int CpuTimerEngine::CreateFor(pid_t tid, timer_t* timer) {
  sigevent event;
  memset(&event, 0, sizeof(event));
  event.sigev_notify = SIGEV_THREAD_ID;
  event.sigev_signo = signal_;
  event._sigev_un._tid = tid;
  if (timer_create(ThreadCpuClock(tid), &event, timer) != 0) return errno;
  itimerspec spec;
  spec.it_interval.tv_sec = static_cast<time_t>(interval_ns_ / 1000000000);
  spec.it_interval.tv_nsec = static_cast<long>(interval_ns_ % 1000000000);
  spec.it_value = spec.it_interval;
  if (timer_settime(*timer, 0, &spec, nullptr) != 0) {
    const int saved = errno;
    timer_delete(*timer);
    return saved;
  }
  return 0;
}

Status CpuTimerEngine::Start(bool* refused) {
  timer_t probe;
  const int err = CreateFor(static_cast<pid_t>(syscall(SYS_gettid)), &probe);
  if (err != 0) {
    *refused = err == EPERM || err == EACCES || err == ENOSYS || err == EINVAL;
    return Status::Unavailable(
        std::string("timer_create(thread CPU clock, SIGEV_THREAD_ID) failed: ") + strerror(err),
        err);
  }
  timer_delete(probe);
  return Status();
}

void CpuTimerEngine::Stop() {
  for (const auto& [tid, timer] : timers_) timer_delete(timer);
  timers_.clear();
}

void CpuTimerEngine::AddThread(pid_t tid) {
  if (timers_.count(tid) != 0) return;
  timer_t timer;
  const int err = CreateFor(tid, &timer);
  if (err != 0) {
    if (err != EINVAL && err != ESRCH) ++failed_threads_;  // EINVAL: the thread has exited
    return;
  }
  timers_[tid] = timer;
}

void CpuTimerEngine::RemoveThread(pid_t tid) {
  auto it = timers_.find(tid);
  if (it == timers_.end()) return;
  timer_delete(it->second);
  timers_.erase(it);
}

}  // namespace ctxprof
