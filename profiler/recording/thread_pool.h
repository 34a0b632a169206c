// ThreadPool: the recording's threads — the JFR java.lang.Thread pool.
//
// A thread is resolved (name, Java thread id) once per chunk it appears in: a thread may be
// renamed and a tid may be reused by a new thread. Readers cache pool entries across chunks by
// key, so a key always denotes one (tid, name, Java id) triple for the whole recording.
//
// Keys are what readers that do not look inside the pool show as the thread id (async-profiler's
// converter prints "[name tid=KEY]"), so the first triple of a kernel tid gets the tid itself as
// key, like async-profiler's files. A later triple of the same tid (renamed, or a new thread that
// reused the tid) gets a key above every possible tid (kFirstSpareKey: pid_max is at most 2^22),
// and its osThreadId field still holds the tid.
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

namespace ctxprof {

class ThreadPool {
 public:
  // Keys for the second and later identities of a tid; above PID_MAX_LIMIT (2^22).
  static constexpr uint32_t kFirstSpareKey = 1u << 22;

  explicit ThreadPool(ThreadResolver* resolver) : resolver_(resolver) {}

  // The key of kernel thread `tid` in chunk `chunk`, queued for that chunk's checkpoint; adds
  // the estimated bytes of a newly queued entry to *pending_bytes.
  uint32_t Key(int32_t tid, uint32_t chunk, uint64_t* pending_bytes);

  bool has_pending() const { return !pending_.empty(); }
  // Appends the queued entries as the Thread pool (nothing when none) and clears the queue.
  void WritePending(JfrBuffer* out);

 private:
  struct Thread {
    uint32_t key;
    int32_t tid;
    std::string name;
    int64_t java_thread_id;
    uint32_t carried_in_chunk;  // the last chunk whose checkpoint carries this entry
  };
  struct Slot {
    size_t thread = 0;               // index into threads_ of the tid's current identity
    uint32_t resolved_in_chunk = 0;  // 0 = never resolved
  };

  ThreadResolver* const resolver_;
  std::vector<Thread> threads_;
  std::unordered_map<int32_t, Slot> by_tid_;
  uint32_t next_spare_key_ = kFirstSpareKey;
  std::vector<size_t> pending_;  // indices into threads_
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_RECORDING_THREAD_POOL_H_
