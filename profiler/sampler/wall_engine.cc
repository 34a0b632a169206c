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
  std::vector<Send> repeats;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    repeats.swap(removed_);
    for (Target& target : targets_) {
      // A thread between spaced checks gets its last check now (the sampler thread has ended,
      // so its scratch buffer is free), so that its idle time up to the last tick is written.
      if (target.quiet_since_tick != kUnaccounted && target.slot != WallWitnessTable::kNoSlot) {
        target.next_check_tick = last_tick_;  // due now: its unchecked ticks end here
        Idle(&target, last_tick_);
      }
      OweRepeat(&target, &repeats);
      if (target.slot != WallWitnessTable::kNoSlot) witnesses_->Release(target.slot);
    }
    targets_.clear();
  }
  for (const Send& repeat : repeats) WriteRepeat(repeat);
}

void WallEngine::AddThread(pid_t tid) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const Target& target : targets_) {
    if (target.tid == tid) return;
  }
  // Its wall time counts from the last tick (0: the start): a thread that waits several ticks
  // for its first visit (more threads than the budget, backpressure) gets them all in that
  // sample's weight.
  targets_.push_back(
      Target{tid, witnesses_->Acquire(tid), last_tick_, 0, WallCheck(), 0, 0, kUnaccounted, 0});
}

void WallEngine::RemoveThread(pid_t tid) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t index = 0; index < targets_.size(); ++index) {
    Target& target = targets_[index];
    if (target.tid != tid) continue;
    // Its idle time up to its last visit is known; the sampler (or Stop) writes it.
    OweRepeat(&target, &removed_);
    if (target.slot != WallWitnessTable::kNoSlot) witnesses_->Release(target.slot);
    targets_.erase(targets_.begin() + static_cast<long>(index));
    if (index < next_index_) --next_index_;
    return;
  }
}

void WallEngine::OweRepeat(Target* target, std::vector<Send>* sends) {
  if (target->idle_tick <= target->accounted_tick) return;
  const uint64_t intervals = target->idle_tick - target->accounted_tick;
  sends->push_back(Send{target->tid, WallWitnessTable::kNoSlot,
                        static_cast<uint32_t>(std::min<uint64_t>(intervals, INT32_MAX)), true,
                        target->check.there_ticks, target->repeated_ticks});
  target->accounted_tick = target->idle_tick;
}

bool WallEngine::Idle(Target* target, uint64_t tick) {
  WallWitness& witness = witnesses_->at(target->slot);
  // An idle thread's witness stands for about a second at most before it is re-signalled when
  // its signal seems lost.
  const uint64_t second = TicksPerSecond();
  switch (witness.state.load(std::memory_order_acquire)) {
    case WallWitness::kPending:
      // Its last signal is not handled yet: another one would merge into it.
      return tick - target->signalled_tick < second;
    case WallWitness::kSleeping: {
      const bool quiet = target->quiet_since_tick != kUnaccounted;
      if (quiet && tick < target->next_check_tick) return true;
      const uint64_t cpu_at_last_check = target->check.cpu_checked;  // valid while quiet
      if (!witnesses_->StillThere(witness, context_map_->BlockFor(target->tid), *clock_,
                                  &target->check)) {
        const uint64_t cpu_nanos = target->check.cpu_nanos;
        // cpu_nanos 0: it exited (ESRCH at the signal).
        if (quiet && cpu_nanos != 0 && tick > target->idle_tick && cpu_nanos >= cpu_at_last_check) {
          target->idle_tick += TicksStillWaiting(target->idle_tick, target->next_check_tick, tick,
                                                 cpu_nanos - cpu_at_last_check, interval_ns_);
        }
        target->quiet_since_tick = kUnaccounted;
        return false;
      }
      if (!quiet) target->quiet_since_tick = tick;
      target->idle_tick = tick;
      target->repeated_ticks = witness.sample_ticks;
      target->next_check_tick = tick + CheckSpacing(tick - target->quiet_since_tick, second);
      return true;
    }
    default:
      return false;
  }
}

int WallEngine::SignalBudget(int threads_per_tick, uint32_t pending, uint32_t high_water) {
  const uint32_t knee = high_water / 4;
  if (pending <= knee) return threads_per_tick;
  if (pending >= high_water) return 0;
  const uint64_t span = high_water - knee;
  const uint64_t free = high_water - pending;
  return static_cast<int>((static_cast<uint64_t>(threads_per_tick) * free + span - 1) / span);
}

uint64_t WallEngine::TicksStillWaiting(uint64_t idle_tick, uint64_t due_tick, uint64_t tick,
                                       uint64_t ran_nanos, uint64_t interval_ns) {
  // It left its wait within the ticks its check spacing left unchecked: it ran for about its CPU
  // time of them, the last ones; before that it was still waiting. Ticks past the due check (the
  // sampler woke late) are not split: as every thread's skipped ticks, they go to its next sample
  // (split too, a late sampler's whole gap would be credited to the wait that just ended).
  const uint64_t unchecked = std::min(tick, due_tick) - idle_tick;
  const uint64_t ran = std::min<uint64_t>(
      unchecked, std::max<uint64_t>(1, (ran_nanos + interval_ns - 1) / interval_ns));
  return unchecked - ran;
}

uint32_t WallEngine::CheckSpacing(uint64_t quiet_ticks, uint64_t ticks_per_second) {
  if (quiet_ticks < ticks_per_second) return 1;
  return quiet_ticks < 2 * ticks_per_second ? 2 : kMaxCheckSpacing;
}

void WallEngine::Visit(uint64_t tick, std::vector<Send>* sends) {
  sends->clear();
  // An idle thread's time is written at least about once a second, so that each flush holds it.
  const uint64_t second = TicksPerSecond();
  std::lock_guard<std::mutex> lock(mutex_);
  last_tick_ = tick;
  sends->swap(removed_);
  const size_t count = targets_.size();
  const int budget = SignalBudget(threads_per_tick_, buffer_->pending(), buffer_->high_water());
  if (budget < threads_per_tick_) throttled_ticks_.fetch_add(1, std::memory_order_relaxed);
  int signals = 0;
  for (size_t visited = 0; visited < count && signals < budget; ++visited) {
    if (next_index_ >= count) next_index_ = 0;
    Target& target = targets_[next_index_++];
    if (filter_context_) {
      ContextBlock* block = context_map_->BlockFor(target.tid);
      ContextSnapshot snapshot;
      if (block == nullptr ||
          ReadBlock(*block, &snapshot, kOtherThreadReadAttempts) != ReadStatus::kConsistent ||
          snapshot.empty()) {
        // Time without a context is not sampled; the next sample starts from here.
        OweRepeat(&target, sends);
        target.accounted_tick = kUnaccounted;
        target.idle_tick = 0;
        target.quiet_since_tick = kUnaccounted;
        continue;
      }
    }
    if (target.accounted_tick != kUnaccounted && target.slot != WallWitnessTable::kNoSlot &&
        Idle(&target, tick)) {
      if (target.idle_tick == tick && tick - target.accounted_tick >= second) {
        OweRepeat(&target, sends);
      }
      continue;
    }
    OweRepeat(&target, sends);
    const uint64_t intervals =
        target.accounted_tick == kUnaccounted ? 1 : tick - target.accounted_tick;
    sends->push_back(Send{target.tid, target.slot,
                          static_cast<uint32_t>(std::min<uint64_t>(intervals, INT32_MAX)), false, 0,
                          0});
    target.accounted_tick = tick;
    target.signalled_tick = tick;
    target.quiet_since_tick = kUnaccounted;
    target.check.cpu_checked = UINT64_MAX;  // its next witness is a new one
    if (target.slot != WallWitnessTable::kNoSlot) {
      witnesses_->at(target.slot).state.store(WallWitness::kPending, std::memory_order_release);
    }
    ++signals;
  }
}

void WallEngine::WriteRepeat(const Send& repeat) {
  intervals_accounted_.fetch_add(repeat.weight, std::memory_order_relaxed);
  SampleRecord* record = buffer_->TryClaim();
  if (record == nullptr) {
    buffer_->CountDrop();
    return;
  }
  record->ticks = repeat.ticks;
  record->tid = repeat.tid;
  record->kind = SampleKind::kWall;
  record->engine = Engine::kWall;
  record->flags = kSampleRepeatLast;
  record->state = ThreadState::kSleeping;
  record->weight = repeat.weight;
  record->virtual_thread_id = 0;
  memset(&record->context, 0, sizeof(record->context));
  record->event = EventFields();
  record->event.amount = repeat.repeated_ticks;
  record->frame_count = 0;
  buffer_->Publish(record);
}

void WallEngine::Deliver(const std::vector<Send>& sends, pid_t pid, uid_t uid) {
  for (const Send& send : sends) {
    if (send.repeat) {
      WriteRepeat(send);
      continue;
    }
    intervals_accounted_.fetch_add(send.weight, std::memory_order_relaxed);
    siginfo_t info;
    memset(&info, 0, sizeof(info));
    info.si_signo = signal_;
    info.si_code = SI_QUEUE;
    info.si_pid = pid;
    info.si_uid = uid;
    info.si_value = WallWitnessTable::Encode(send.weight, send.slot);
    if (syscall(SYS_rt_tgsigqueueinfo, pid, send.tid, signal_, &info) == 0) {
      signals_sent_.fetch_add(1, std::memory_order_relaxed);
    }
    // ESRCH: the thread exited; discovery removes it at the next rescan.
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
  std::vector<Send> sends;
  sends.reserve(2 * static_cast<size_t>(threads_per_tick_));
  // Ticks are counted on the clock, not by wake-ups: a sampler woken late (a loaded machine, a
  // suspend) finds the ticks it missed counted, so every weight is the wall time it stands for.
  const auto start = std::chrono::steady_clock::now();
  const auto interval = std::chrono::nanoseconds(interval_ns_);
  for (uint64_t tick = 1;; ++tick) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (wake_.wait_until(lock, start + interval * tick, [this] { return stopping_; })) return;
    }
    const uint64_t elapsed =
        static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                  std::chrono::steady_clock::now() - start)
                                  .count());
    const uint64_t due = elapsed / interval_ns_;
    if (due > tick) {
      skipped_ticks_.fetch_add(due - tick, std::memory_order_relaxed);
      tick = due;
    }
    Visit(tick, &sends);
    Deliver(sends, pid, uid);
  }
}

}  // namespace ctxprof
