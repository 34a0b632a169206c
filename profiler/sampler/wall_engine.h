// WallEngine (event=wall / wall=): a sampler thread that, every wall interval, visits the
// registered threads round-robin and accounts for every interval of each thread's wall time
// whatever its state (running, runnable or blocked), as weighted samples:
//  * A thread that ran since it was last sampled gets the profiling signal (rt_tgsigqueueinfo,
//    SI_QUEUE from our own pid); si_value carries its witness slot and the intervals since it
//    was last accounted for (more than 1 when threads_per_tick, backpressure or filter=context
//    held it back; a new thread counts from the tick before it was added). The handler records a
//    wall sample with that weight and state (sleeping when interrupted in a system call). At most
//    threads_per_tick signals go out per tick.
//  * A sleeping thread's handler also leaves a witness (wall_witness.h). While the thread is still
//    where its witness saw it, it gets no signal: its idle intervals become a kSampleRepeatLast
//    record naming that sample (when it is seen to have left, every second of idling, when it is
//    removed), stamped with the last check that proved it there (it may have woken since), which
//    the session turns into a copy of that sample (profiler/session/wall_repeats.h). Each check
//    costs a clock read and a clock_gettime; idle visits do not use the per-tick budget.
//  * Checks thin out for a long-idle thread (CheckSpacing): every tick for its first second, then
//    every 2nd tick, after two seconds every kMaxCheckSpacing-th (a JVM's many waiting threads made
//    the clock reads most of the sampler's CPU). When a spaced check finds the thread gone, the
//    unchecked ticks are split by its CPU clock: as many intervals as it ran (at least one) go to
//    its next sample, the rest to the wait (ticks the sampler skipped past the due check are
//    not split: they go to the next sample). Wall time stays whole; only when, within
//    kMaxCheckSpacing - 1 intervals, it left the wait is unknown.
//  * A thread whose previous signal is still being handled (its witness slot unfinished) is not
//    signalled again, since a second signal would merge into the pending one and lose its weight;
//    after about a second it is signalled anyway (the first was lost).
//
// Backpressure: a tick's signal budget shrinks with the records waiting in the sample buffer, from
// threads_per_tick to none at its high-water mark (SignalBudget). A thread left unsignalled keeps
// its intervals for its next sample, so wall time stays accounted for; CPU samples, which the
// kernel triggers, are not throttled and keep the buffer's room.
//
// filter=context: the sampler reads the target's context block (seqlock, kOtherThreadReadAttempts)
// and skips threads with no context, whose time is not accounted for and which use no budget.
//
// Side effect (as with every wall-clock profiler): a signal interrupts blocking system calls. Those
// the kernel restarts (SA_RESTART: read, futex waits, ...) are invisible; nanosleep,
// clock_nanosleep, epoll_wait and poll return EINTR, so host code must retry those.
//
// Thread safety: AddThread/RemoveThread (control threads) and the sampler thread share the target
// list and the witness slots' allocation under mutex_; signals and records are sent outside the
// lock, and the sample buffer is multi-producer (the sampler claims slots like any handler).
#ifndef CTXPROF_PROFILER_SAMPLER_WALL_ENGINE_H_
#define CTXPROF_PROFILER_SAMPLER_WALL_ENGINE_H_

#include <sys/types.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "context/context_map.h"
#include "profiler/sampler/clock.h"
#include "profiler/sampler/engine.h"
#include "profiler/sampler/sample_buffer.h"
#include "profiler/sampler/wall_witness.h"

namespace ctxprof {

class WallEngine : public SamplingEngine {
 public:
  // Repeat records go into `buffer`, stamped with `clock`; witnesses are in `witnesses`. All
  // three outlive the engine.
  WallEngine(uint64_t interval_ns, int signal, int threads_per_tick, bool filter_context,
             ContextMap* context_map, SampleBuffer* buffer, const Clock* clock,
             WallWitnessTable* witnesses)
      : interval_ns_(interval_ns),
        signal_(signal),
        threads_per_tick_(threads_per_tick),
        filter_context_(filter_context),
        context_map_(context_map),
        buffer_(buffer),
        clock_(clock),
        witnesses_(witnesses) {}
  ~WallEngine() override { Stop(); }

  Engine kind() const override { return Engine::kWall; }
  const char* name() const override { return "wall"; }
  Status Start(bool* refused) override;
  void Stop() override;
  void AddThread(pid_t tid) override;
  void RemoveThread(pid_t tid) override;

  // The sampler thread's tid (0 before Start): the profiler excludes it from sampling.
  pid_t sampler_tid() const { return sampler_tid_.load(); }
  uint64_t signals_sent() const { return signals_sent_.load(std::memory_order_relaxed); }
  // Intervals of wall time accounted for so far, by signals and repeat records together.
  uint64_t intervals_accounted() const {
    return intervals_accounted_.load(std::memory_order_relaxed);
  }
  // Ticks whose signal budget the backpressure cut below threads_per_tick.
  uint64_t throttled_ticks() const { return throttled_ticks_.load(std::memory_order_relaxed); }
  // Ticks the sampler thread did not wake for (it was scheduled late by more than an interval):
  // their time went into the next tick's weights, at the stacks of that later moment.
  uint64_t skipped_ticks() const { return skipped_ticks_.load(std::memory_order_relaxed); }

  // The signals a tick may send: threads_per_tick while at most a quarter of the high-water mark
  // waits in the buffer (a drain every Session::kDrainInterval keeps it there), then in
  // proportion to the room left below the mark (rounded up), 0 at or above it.
  static int SignalBudget(int threads_per_tick, uint32_t pending, uint32_t high_water);

  // Ticks from a check that found a thread still idle to its next check, `quiet_ticks` after
  // the first check that found it so, with `ticks_per_second` ticks a second: 1 for a second,
  // 2 for the next, then kMaxCheckSpacing.
  static constexpr uint32_t kMaxCheckSpacing = 4;
  static uint32_t CheckSpacing(uint64_t quiet_ticks, uint64_t ticks_per_second);
  // A check at `tick` found gone a thread last found still there at `idle_tick`, whose next check
  // was due at `due_tick` (idle_tick < due_tick, idle_tick < tick) and which ran `ran_nanos` of
  // CPU since: the ticks after idle_tick it still waited (class comment).
  static uint64_t TicksStillWaiting(uint64_t idle_tick, uint64_t due_tick, uint64_t tick,
                                    uint64_t ran_nanos, uint64_t interval_ns);

 private:
  static constexpr uint64_t kUnaccounted = UINT64_MAX;
  struct Target {
    pid_t tid;
    uint32_t slot;  // its witness slot; WallWitnessTable::kNoSlot when none was free
    // Its wall time before this tick is accounted for; kUnaccounted: from no known tick (its
    // next sample counts one interval).
    uint64_t accounted_tick;
    uint64_t idle_tick;       // seen still where its witness saw it at this tick
    WallCheck check;          // its witness's checks (there_ticks: the time of its repeat)
    uint64_t repeated_ticks;  // the ticks of the wall sample its repeat repeats
    uint64_t signalled_tick;  // the tick of its last signal
    // The first of the checks in a row that found it still there; kUnaccounted: none since its
    // last signal (or the last check that found it gone).
    uint64_t quiet_since_tick;
    uint64_t next_check_tick;  // while quiet: idle until this tick, then checked
  };
  struct Send {
    pid_t tid;
    uint32_t slot;
    uint32_t weight;          // intervals
    bool repeat;              // a repeat record instead of a signal
    uint64_t ticks;           // a repeat's time: when the thread was last proven idle
    uint64_t repeated_ticks;  // a repeat's sample (wall_repeats.h)
  };

  void Run();
  uint64_t TicksPerSecond() const { return std::max<uint64_t>(1, 1000000000u / interval_ns_); }
  // Decides, for tick `tick`, the signals and repeat records of the next targets (round-robin,
  // at most SignalBudget signals) into *sends.
  void Visit(uint64_t tick, std::vector<Send>* sends);
  // True when `target`, which has a witness slot, needs no signal at `tick`: its signal is still
  // pending, or it is still idle (checked now or not due for a check). When a due check finds it
  // gone, moves idle_tick over the unchecked ticks it did not run (class comment).
  bool Idle(Target* target, uint64_t tick);
  // Appends the repeat a target owes for its idle intervals up to idle_tick, if any.
  static void OweRepeat(Target* target, std::vector<Send>* sends);
  void Deliver(const std::vector<Send>& sends, pid_t pid, uid_t uid);
  void WriteRepeat(const Send& repeat);

  const uint64_t interval_ns_;
  const int signal_;
  const int threads_per_tick_;
  const bool filter_context_;
  ContextMap* const context_map_;
  SampleBuffer* const buffer_;
  const Clock* const clock_;
  WallWitnessTable* const witnesses_;

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;        // guarded by mutex_
  std::vector<Target> targets_;  // guarded by mutex_
  size_t next_index_ = 0;        // guarded by mutex_
  uint64_t last_tick_ = 0;       // guarded by mutex_: the tick Visit last ran for, 0 = none yet
  std::thread thread_;
  std::atomic<pid_t> sampler_tid_{0};
  std::atomic<uint64_t> signals_sent_{0};
  std::atomic<uint64_t> intervals_accounted_{0};
  std::atomic<uint64_t> throttled_ticks_{0};
  std::atomic<uint64_t> skipped_ticks_{0};
  std::vector<Send> removed_;  // guarded by mutex_: repeats owed by removed targets
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SAMPLER_WALL_ENGINE_H_
