// WallEngine (event=wall / wall=): a sampler thread that, every wall interval, sends the
// profiling signal to at most `threads_per_tick` registered threads, continuing round-robin from
// where the previous tick stopped, so every thread is sampled at the same rate whatever its state
// (running, runnable or blocked). The signal goes with rt_tgsigqueueinfo (si_code SI_QUEUE from
// our own pid) and carries in si_value the intervals since the thread's previous signal (1 when
// every thread is signalled every tick; more when there are more threads than threads_per_tick,
// when filter=context skipped it, or when the sampler thread itself ran late): the handler
// records a wall sample with that weight and the thread's state (sleeping when it was
// interrupted in a system call), so every thread's wall time is accounted for, not only
// threads_per_tick intervals per tick. Ticks are counted in elapsed intervals since the start,
// not in the sampler's loops: under load the sampler is one runnable thread among many, and a
// late loop still accounts for all the time that passed.
//
// filter=context: the sampler reads the target's context block from its own thread (seqlock,
// kOtherThreadReadAttempts) and skips threads with no context; skipped threads do not use up the
// per-tick budget.
//
// Side effect (as with every wall-clock profiler): a signal interrupts blocking system calls.
// Calls that the kernel restarts (SA_RESTART covers read, futex waits, ...) are invisible;
// nanosleep/clock_nanosleep/epoll_wait/poll return EINTR, so host code must retry those.
//
// Thread safety: AddThread/RemoveThread (control threads) and the sampler thread share the tid
// list under mutex_; the signals themselves are sent outside the lock.
#ifndef CTXPROF_PROFILER_SAMPLER_WALL_ENGINE_H_
#define CTXPROF_PROFILER_SAMPLER_WALL_ENGINE_H_

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "context/context_map.h"
#include "profiler/sampler/engine.h"

namespace ctxprof {

class WallEngine : public SamplingEngine {
 public:
  WallEngine(uint64_t interval_ns, int signal, int threads_per_tick, bool filter_context,
             ContextMap* context_map)
      : interval_ns_(interval_ns),
        signal_(signal),
        threads_per_tick_(threads_per_tick),
        filter_context_(filter_context),
        context_map_(context_map) {}
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

 private:
  void Run();
  struct Target {
    pid_t tid;
    uint64_t signalled_tick;  // the tick of its last signal; 0 = none yet
  };
  struct Signal {
    pid_t tid;
    uint32_t weight;  // intervals since its previous signal
  };

  // The next <= threads_per_tick_ targets at tick `tick`, round-robin.
  void PickTargets(uint64_t tick, std::vector<Signal>* signals);

  const uint64_t interval_ns_;
  const int signal_;
  const int threads_per_tick_;
  const bool filter_context_;
  ContextMap* const context_map_;

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;        // guarded by mutex_
  std::vector<Target> targets_;  // guarded by mutex_
  size_t next_index_ = 0;        // guarded by mutex_
  std::thread thread_;
  std::atomic<pid_t> sampler_tid_{0};
  std::atomic<uint64_t> signals_sent_{0};
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SAMPLER_WALL_ENGINE_H_
