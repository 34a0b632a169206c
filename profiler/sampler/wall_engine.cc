#include "profiler/sampler/wall_engine.h"

#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <system_error>

namespace ctxprof {

Status WallEngine::Start(bool* refused) {
  std::unique_lock<std::mutex> lock(mutex_);
  stopping_ = false;
  try {
    thread_ = std::thread([this] { Run(); });
  } catch (const std::system_error& e) {
    // EAGAIN: a thread or memory limit (RLIMIT_NPROC, threads-max, cgroup pids.max).
    *refused = false;
    return Status::Unavailable(std::string("cannot create the wall sampler thread: ") +
                                   strerror(e.code().value()) +
                                   "; raise the process's thread limit or sample without wall",
                               e.code().value());
  }
  // Wait until the sampler knows its tid, so the profiler can exclude it right away.
  wake_.wait(lock, [this] { return sampler_tid_.load() != 0; });
  return Status();
}

void WallEngine::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!thread_.joinable()) return;
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
  std::lock_guard<std::mutex> lock(mutex_);
  targets_.clear();
}

void WallEngine::AddThread(pid_t tid) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const Target& target : targets_) {
    if (target.tid == tid) return;
  }
  targets_.push_back(Target{tid, 0});
}

void WallEngine::RemoveThread(pid_t tid) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t index = 0; index < targets_.size(); ++index) {
    if (targets_[index].tid != tid) continue;
    targets_.erase(targets_.begin() + static_cast<long>(index));
    if (index < next_index_) --next_index_;
    return;
  }
}

void WallEngine::PickTargets(uint64_t tick, std::vector<Signal>* signals) {
  signals->clear();
  std::lock_guard<std::mutex> lock(mutex_);
  const size_t count = targets_.size();
  for (size_t visited = 0;
       visited < count && signals->size() < static_cast<size_t>(threads_per_tick_); ++visited) {
    if (next_index_ >= count) next_index_ = 0;
    Target& target = targets_[next_index_++];
    if (filter_context_) {
      ContextBlock* block = context_map_->BlockFor(target.tid);
      ContextSnapshot snapshot;
      if (block == nullptr ||
          ReadBlock(*block, &snapshot, kOtherThreadReadAttempts) != ReadStatus::kConsistent ||
          snapshot.empty()) {
        target.signalled_tick = 0;  // time without a context is not sampled
        continue;
      }
    }
    const uint64_t intervals = target.signalled_tick == 0 ? 1 : tick - target.signalled_tick;
    target.signalled_tick = tick;
    signals->push_back(
        Signal{target.tid, static_cast<uint32_t>(std::min<uint64_t>(intervals, INT32_MAX))});
  }
}

void WallEngine::Run() {
  pthread_setname_np(pthread_self(), "ctxprof-wall");  // as the writer thread (session.cc)
  const pid_t pid = getpid();
  const uid_t uid = getuid();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    sampler_tid_ = static_cast<pid_t>(syscall(SYS_gettid));
  }
  wake_.notify_all();
  std::vector<Signal> signals;
  signals.reserve(static_cast<size_t>(threads_per_tick_));
  const auto start = std::chrono::steady_clock::now();
  auto deadline = start;
  const auto interval = std::chrono::nanoseconds(interval_ns_);
  while (true) {
    deadline += interval;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (wake_.wait_until(lock, deadline, [this] { return stopping_; })) return;
    }
    // The tick is the number of intervals since the start, so a thread's weight (ticks since
    // its previous signal) covers the time that passed even when this thread ran late: under
    // load it is one runnable thread among many and may get a CPU only every few hundred ms.
    // After such a stall it does not fire a burst of catch-up ticks. (steady_clock does not
    // advance while the machine is suspended.)
    const auto now = std::chrono::steady_clock::now();
    if (now - deadline > interval) deadline = now;
    const uint64_t tick = 1 + static_cast<uint64_t>((now - start) / interval);
    PickTargets(tick, &signals);
    for (const Signal& signal : signals) {
      siginfo_t info;
      memset(&info, 0, sizeof(info));
      info.si_signo = signal_;
      info.si_code = SI_QUEUE;
      info.si_pid = pid;
      info.si_uid = uid;
      info.si_value.sival_int = static_cast<int>(signal.weight);
      if (syscall(SYS_rt_tgsigqueueinfo, pid, signal.tid, signal_, &info) == 0) {
        signals_sent_.fetch_add(1, std::memory_order_relaxed);
      }
      // ESRCH: the thread exited; discovery removes it at the next rescan.
    }
  }
}

}  // namespace ctxprof
