// ThreadPool: the recording's threads — the JFR java.lang.Thread pool, keyed by (tid, name).
//
// A thread is resolved (name, Java thread id) once per chunk it appears in: a thread may be
// renamed and a tid may be reused by a new thread. A changed name or Java id gets a new key, so
// a key always denotes one (tid, name, Java id) triple for the whole recording.
//
// Thread safety: none; owned by the JFR writer's thread, which is also the only caller of the
// resolver.
#ifndef CTXPROF_PROFILER_RECORDING_THREAD_POOL_H_
#define CTXPROF_PROFILER_RECORDING_THREAD_POOL_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "profiler/jfr/jfr_buffer.h"
#include "profiler/recording/frame_resolver.h"
#include "profiler/recording/pool_state.h"

namespace ctxprof {

class ThreadPool {
 public:
  explicit ThreadPool(ThreadResolver* resolver) : resolver_(resolver) {}

  // The key of kernel thread `tid` in chunk `chunk`, queued for that chunk's checkpoint; adds
  // the estimated bytes of a newly queued entry to *pending_bytes.
  uint32_t Key(int32_t tid, uint32_t chunk, uint64_t* pending_bytes);

  bool has_pending() const { return !pool_.pending.empty(); }
  // Appends the queued entries as the Thread pool (nothing when none) and clears the queue.
  void WritePending(JfrBuffer* out);

 private:
  struct Thread {
    std::string name;
    int32_t tid;
    int64_t java_thread_id;
  };
  struct Slot {
    uint32_t key = 0;  // 0 = never resolved
    uint32_t resolved_in_chunk = 0;
  };

  ThreadResolver* const resolver_;
  std::vector<Thread> threads_;               // threads_[key - 1]
  std::unordered_map<int32_t, Slot> by_tid_;  // the current key of each kernel tid
  PoolState pool_;
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_RECORDING_THREAD_POOL_H_
