// ThreadPool: the recording's threads — the JFR java.lang.Thread pool, keyed by (tid, name).
//
// A thread is resolved (name, Java thread id) once per chunk it appears in: a thread may be
// renamed and a tid may be reused by a new thread. A changed name or Java id gets a new key, so
// a key always denotes one (tid, name, Java id) triple for the whole recording.
//
// A sample of a carrier thread that runs a virtual thread belongs to the virtual thread, and its
// entry is written the way JDK 25's JFR writes one: no OS name, osThreadId 0, the virtual
// thread's name (often "") and java.lang.Thread id, `virtual` true. Virtual threads have keys
// from kFirstVirtualKey up, never reused; a virtual thread no sample of the previous or the
// current chunk used is forgotten when a chunk starts (ForgetVirtualThreads), so memory follows
// the virtual threads sampled per chunk, not all that ever ran (one that runs again later gets a
// new key).
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

  // Virtual threads' keys start here: above any platform thread's key, below 2^28 (a 4-byte
  // varint in every event that names the thread).
  static constexpr uint32_t kFirstVirtualKey = 1u << 27;

  // The key, in chunk `chunk`, of the thread a sample belongs to: the virtual thread
  // `virtual_thread_id` (its java.lang.Thread id), or kernel thread `tid` when that is 0. Queued
  // for that chunk's checkpoint; adds the estimated bytes of a newly queued entry to
  // *pending_bytes.
  uint32_t Key(int32_t tid, uint64_t virtual_thread_id, uint32_t chunk, uint64_t* pending_bytes);
  // Forgets the virtual threads that chunks before `chunk` - 1 used last (call at a chunk's
  // start, when nothing is pending).
  void ForgetVirtualThreads(uint32_t chunk);

  bool has_pending() const { return !pool_.pending.empty() || !pending_virtual_.empty(); }
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
  struct VirtualThread {
    uint32_t key = 0;  // 0 = never resolved
    uint32_t resolved_in_chunk = 0;
    uint32_t carried_in_chunk = 0;
    std::string name;
  };

  ThreadResolver* const resolver_;
  std::vector<Thread> threads_;               // threads_[key - 1]
  std::unordered_map<int32_t, Slot> by_tid_;  // the current key of each kernel tid
  PoolState pool_;
  std::unordered_map<uint64_t, VirtualThread> virtual_;  // by java.lang.Thread id
  std::vector<uint64_t> pending_virtual_;                // ids to write
  uint32_t next_virtual_key_ = kFirstVirtualKey;
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_RECORDING_THREAD_POOL_H_
