#include "profiler/sampler/itimer_engine.h"

#include <sys/time.h>

#include <cerrno>
#include <cstring>

namespace ctxprof {

Status ITimerEngine::Start(bool* refused) {
  itimerval current;
  if (getitimer(ITIMER_PROF, &current) == 0 &&
      (current.it_value.tv_sec != 0 || current.it_value.tv_usec != 0)) {
    *refused = true;
    return Status::Unavailable(
        "setitimer(ITIMER_PROF): the process already has a profiling timer armed", 0);
  }
  itimerval spec;
  spec.it_interval.tv_sec = static_cast<time_t>(interval_ns_ / 1000000000);
  spec.it_interval.tv_usec = static_cast<suseconds_t>((interval_ns_ % 1000000000) / 1000);
  spec.it_value = spec.it_interval;
  if (setitimer(ITIMER_PROF, &spec, nullptr) != 0) {
    const int err = errno;
    *refused = true;
    return Status::Unavailable(std::string("setitimer(ITIMER_PROF) failed: ") + strerror(err), err);
  }
  running_ = true;
  return Status();
}

void ITimerEngine::Stop() {
  if (!running_) return;
  itimerval zero;
  memset(&zero, 0, sizeof(zero));
  setitimer(ITIMER_PROF, &zero, nullptr);
  running_ = false;
}

}  // namespace ctxprof
