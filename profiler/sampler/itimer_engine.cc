#include "profiler/sampler/itimer_engine.h"

#include <sys/time.h>
#include <time.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace ctxprof {
namespace {

std::atomic<uint64_t> g_credited_cpu_ns{0};
std::atomic<uint64_t> g_interval_ns{1};

uint64_t ProcessCpuNanos() {
  timespec now;
  if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now) != 0) return 0;
  return static_cast<uint64_t>(now.tv_sec) * 1000000000 + static_cast<uint64_t>(now.tv_nsec);
}

}  // namespace

uint32_t ITimerEngine::SampleWeight() {
  const uint64_t now = ProcessCpuNanos();
  const uint64_t interval = g_interval_ns.load(std::memory_order_relaxed);
  uint64_t credited = g_credited_cpu_ns.load(std::memory_order_relaxed);
  uint64_t intervals;
  do {
    // The signal itself says at least one interval passed; a clock that cannot be read (0)
    // or a credit ahead of it (another handler took this CPU time) leaves it at that.
    intervals = now > credited ? (now - credited) / interval : 0;
    if (intervals < 1) intervals = 1;
    if (intervals > UINT32_MAX) intervals = UINT32_MAX;
  } while (!g_credited_cpu_ns.compare_exchange_weak(credited, credited + intervals * interval,
                                                    std::memory_order_relaxed));
  return static_cast<uint32_t>(intervals);
}

Status ITimerEngine::Start(bool* refused) {
  itimerval current;
  if (getitimer(ITIMER_PROF, &current) == 0 &&
      (current.it_value.tv_sec != 0 || current.it_value.tv_usec != 0)) {
    *refused = true;
    return Status::Unavailable(
        "setitimer(ITIMER_PROF): the process already has a profiling timer armed", 0);
  }
  g_interval_ns.store(interval_ns_ > 0 ? interval_ns_ : 1, std::memory_order_relaxed);
  g_credited_cpu_ns.store(ProcessCpuNanos(), std::memory_order_relaxed);
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
