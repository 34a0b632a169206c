// ThreadRegistry: the set of threads a session samples, and the engines that must arm them.
//
// Discovery for native programs: Rescan() lists /proc/self/task and arms new tids / disarms tids
// that disappeared. The session's background thread calls RescanIfChanged() every
// Session::kDrainInterval: one stat() of /proc/self/task (its link count is the thread count +
// 2) decides whether a full listing is needed; a full listing also runs every
// kLooking.full_rescan, which catches a thread exit and a thread start between two checks that
// leave the count unchanged. Limits: a thread that lives shorter than one check interval may
// never be sampled by per-thread engines (cpu, ctimer) or wall; itimer is process-wide and
// covers it. A tid recycled between two
// rescans (the kernel only reuses tids after pid_max wraps) keeps the dead thread's timer/event,
// which no longer fires, until the tid disappears from a listing.
// A runtime that reports its threads (below) leaves only its own helpers to be found so (a
// JVM's GC and compiler threads, which live long): then the count is checked and the listing
// runs less often (kReported; docs/SAMPLER.md, "Thread discovery").
// Hooks: OnThreadStart/OnThreadEnd let a runtime that knows thread lifetimes exactly (JVMTI
// ThreadStart/ThreadEnd) arm and disarm a thread immediately; they may be called from any
// thread, including the thread itself.
//
// Thread safety: all methods lock mutex_, which also serialises every engine call
// (SamplingEngine implementations rely on it). Never called from a signal handler.
#ifndef CTXPROF_PROFILER_SAMPLER_THREAD_REGISTRY_H_
#define CTXPROF_PROFILER_SAMPLER_THREAD_REGISTRY_H_

#include <sys/types.h>

#include <chrono>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "profiler/sampler/engine.h"

namespace ctxprof {

class ThreadRegistry {
 public:
  // How often RescanIfChanged checks the thread count (at most), and lists the threads anyway.
  struct Discovery {
    std::chrono::milliseconds check;
    std::chrono::milliseconds full_rescan;
  };
  static constexpr Discovery kLooking{std::chrono::milliseconds{0}, std::chrono::milliseconds{200}};
  static constexpr Discovery kReported{std::chrono::milliseconds{100},
                                       std::chrono::milliseconds{1000}};

  // `engines` must outlive the registry. `runtime_reports_threads`: the runtime calls
  // OnThreadStart/OnThreadEnd for the threads it runs (kReported), else kLooking.
  ThreadRegistry(std::vector<SamplingEngine*> engines, bool runtime_reports_threads)
      : engines_(std::move(engines)), discovery_(runtime_reports_threads ? kReported : kLooking) {}
  // Disarms every thread still armed (RemoveAll), so a registry torn down on any path leaves no
  // per-thread event or timer behind.
  ~ThreadRegistry();
  ThreadRegistry(const ThreadRegistry&) = delete;
  ThreadRegistry& operator=(const ThreadRegistry&) = delete;

  // Never sample `tid` (the profiler's own threads).
  void Exclude(pid_t tid);
  void Rescan();
  // Rescan() if the thread count changed or discovery's full_rescan has passed since the last
  // one; checks at most once per discovery's check. Called by one thread (the background thread).
  void RescanIfChanged();
  void OnThreadStart(pid_t tid);
  void OnThreadEnd(pid_t tid);
  // Disarms every thread (before the engines stop).
  void RemoveAll();
  size_t size();
  uint64_t threads_seen();

 private:
  void AddLocked(pid_t tid);
  void RemoveLocked(pid_t tid);

  const std::vector<SamplingEngine*> engines_;
  const Discovery discovery_;
  std::mutex mutex_;
  std::unordered_set<pid_t> known_;     // guarded by mutex_
  std::unordered_set<pid_t> excluded_;  // guarded by mutex_
  uint64_t threads_seen_ = 0;           // guarded by mutex_
  // RescanIfChanged's state, touched only by its one caller. task_dir_: /proc/self/task, opened
  // at the first check (-1 until then, or when it cannot be opened: then each check stat()s the
  // path); fstat of it skips the path walk (docs/SAMPLER.md, "The background thread's profile").
  int task_dir_ = -1;
  nlink_t last_link_count_ = 0;
  std::chrono::steady_clock::time_point last_check_{};
  std::chrono::steady_clock::time_point last_full_rescan_{};
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SAMPLER_THREAD_REGISTRY_H_
