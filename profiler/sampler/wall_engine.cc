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
  tids_.clear();
}

void WallEngine::AddThread(pid_t tid) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (std::find(tids_.begin(), tids_.end(), tid) == tids_.end()) tids_.push_back(tid);
}

void WallEngine::RemoveThread(pid_t tid) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = std::find(tids_.begin(), tids_.end(), tid);
  if (it == tids_.end()) return;
  const size_t index = static_cast<size_t>(it - tids_.begin());
  tids_.erase(it);
  if (index < next_index_) --next_index_;
}

void WallEngine::PickTargets(std::vector<pid_t>* targets) {
  targets->clear();
  std::lock_guard<std::mutex> lock(mutex_);
  const size_t count = tids_.size();
  for (size_t visited = 0;
       visited < count && targets->size() < static_cast<size_t>(threads_per_tick_); ++visited) {
    if (next_index_ >= count) next_index_ = 0;
    const pid_t tid = tids_[next_index_++];
    if (filter_context_) {
      ContextBlock* block = context_map_->BlockFor(tid);
      ContextSnapshot snapshot;
      if (block == nullptr ||
          ReadBlock(*block, &snapshot, kOtherThreadReadAttempts) != ReadStatus::kConsistent ||
          snapshot.empty()) {
        continue;
      }
    }
    targets->push_back(tid);
  }
}

void WallEngine::Run() {
  pthread_setname_np(pthread_self(), "ctxprof-wall");  // as the writer thread (session.cc)
  const pid_t pid = getpid();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    sampler_tid_ = static_cast<pid_t>(syscall(SYS_gettid));
  }
  wake_.notify_all();
  std::vector<pid_t> targets;
  targets.reserve(static_cast<size_t>(threads_per_tick_));
  auto deadline = std::chrono::steady_clock::now();
  const auto interval = std::chrono::nanoseconds(interval_ns_);
  while (true) {
    deadline += interval;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (wake_.wait_until(lock, deadline, [this] { return stopping_; })) return;
    }
    // After a long stall (e.g. the machine was suspended) do not fire a burst of catch-up ticks.
    const auto now = std::chrono::steady_clock::now();
    if (now - deadline > interval) deadline = now;
    PickTargets(&targets);
    for (pid_t tid : targets) {
      if (syscall(SYS_tgkill, pid, tid, signal_) == 0) {
        signals_sent_.fetch_add(1, std::memory_order_relaxed);
      }
      // ESRCH: the thread exited; discovery removes it at the next rescan.
    }
  }
}

}  // namespace ctxprof
