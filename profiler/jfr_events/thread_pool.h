// ThreadPool: the recording's threads — the JFR java.lang.Thread pool.
//
// A thread is resolved (name, Java thread id) once per chunk it appears in: a thread may be
// renamed and a tid may be reused by a new thread. Readers cache pool entries across chunks by
// key, so a key always denotes one (tid, name, Java id) triple for the whole recording.
//
// Keys are what readers that do not look inside the pool show as the thread id (async-profiler's
// converter prints "[name tid=KEY]"), so the first triple of a kernel tid gets the tid itself as
// key, like async-profiler's files; with jfrsync= a Java thread gets the JDK's own key for it
// (ResolvedThread::jdk_key), which JDK 25's printer joins contexts by. A natural key (tid or
// the JDK's) already taken by another thread makes the later one take a spare key. Every other
// entry gets a spare key above every possible tid
// (kFirstSpareKey: pid_max is at most 2^22), from one counter, never reused: a later triple of
// the same tid (renamed, or a new thread that reused the tid; its osThreadId field still holds
// the tid), and every virtual thread but, with jfrsync=, the first identity of each, which
// takes the JDK's key for it, its java.lang.Thread id (JdkKeysVirtualThreadsById).
//
// A sample of a carrier thread that runs a virtual thread belongs to the virtual thread, and its
// entry is written the way JDK 25's JFR writes one: no OS name, osThreadId 0, the virtual
// thread's name (often "") and java.lang.Thread id, `virtual` true. A virtual thread no sample
// of the previous or the current chunk used is forgotten when a chunk starts
// (ForgetVirtualThreads), so memory follows the virtual threads sampled per chunk, not all that
// ever ran (one that runs again later gets a new key).
//
// Thread safety: none; owned by the JFR writer's thread, which is also the only caller of the
// resolver.
#ifndef CTXPROF_PROFILER_JFR_EVENTS_THREAD_POOL_H_
#define CTXPROF_PROFILER_JFR_EVENTS_THREAD_POOL_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "profiler/jfr/jfr_buffer.h"
#include "profiler/jfr_events/frame_resolver.h"

namespace ctxprof {

class ThreadPool {
 public:
  // Keys of entries other than the first identity of a tid; above PID_MAX_LIMIT (2^22), so a
  // 4-byte varint in every event that names the thread up to 2^28 entries.
  static constexpr uint32_t kFirstSpareKey = 1u << 22;
  // With the JDK's keys (jfrsync=: java.lang.Thread ids, which a service starting a virtual
  // thread per request takes past 2^22 soon), spare keys start here instead (5-byte varints).
  static constexpr uint32_t kFirstSpareKeyBesideJdkKeys = 1u << 31;

  explicit ThreadPool(ThreadResolver* resolver)
      : resolver_(resolver),
        first_spare_key_(resolver->JdkKeysVirtualThreadsById() ? kFirstSpareKeyBesideJdkKeys
                                                               : kFirstSpareKey),
        next_spare_key_(first_spare_key_) {}

  // The key, in chunk `chunk`, of the thread a sample belongs to: the virtual thread
  // `virtual_thread_id` (its java.lang.Thread id), or kernel thread `tid` when that is 0. Queued
  // for that chunk's checkpoint; adds the estimated bytes of a newly queued entry to
  // *pending_bytes.
  uint32_t Key(int32_t tid, uint64_t virtual_thread_id, uint32_t chunk, uint64_t* pending_bytes);
  // Forgets the virtual threads that chunks before `chunk` - 1 used last (call at a chunk's
  // start, when nothing is pending).
  void ForgetVirtualThreads(uint32_t chunk);

  bool has_pending() const { return !pending_.empty() || !pending_virtual_.empty(); }
  // Appends the queued entries as the Thread pool (nothing when none) and clears the queue.
  void WritePending(JfrBuffer* out);

 private:
  struct Thread {
    uint32_t key;
    int32_t tid;  // 0 for a virtual thread
    std::string name;
    int64_t java_thread_id;
    bool is_virtual;
    uint32_t carried_in_chunk;  // the last chunk whose checkpoint carries this entry
  };
  struct Slot {
    size_t thread = 0;               // index into threads_ of the tid's current identity
    uint32_t resolved_in_chunk = 0;  // 0 = never resolved
  };
  struct VirtualSlot {
    Thread thread{};                 // the virtual thread's current identity
    uint32_t resolved_in_chunk = 0;  // 0 = never resolved
  };

  uint32_t VirtualKey(uint64_t id, uint32_t chunk, uint64_t* pending_bytes);
  // True (and the entry's estimated bytes added) when `thread` is not queued for `chunk` yet.
  static bool Carry(Thread* thread, uint32_t chunk, uint64_t* pending_bytes);
  static void PutEntry(const Thread& thread, JfrBuffer* out);

  ThreadResolver* const resolver_;
  std::vector<Thread> threads_;  // kernel threads' identities
  std::unordered_map<int32_t, Slot> by_tid_;
  std::unordered_map<uint64_t, VirtualSlot> virtual_;  // by java.lang.Thread id
  const uint32_t first_spare_key_;
  uint32_t next_spare_key_;
  std::unordered_set<uint32_t> natural_keys_;  // keys below first_spare_key_ handed out
  // Virtual threads keyed by their id (the JDK's key, with jfrsync=): one that is forgotten and
  // comes back takes it again.
  std::unordered_set<uint64_t> virtual_natural_keys_;
  std::vector<size_t> pending_;            // indices into threads_
  std::vector<uint64_t> pending_virtual_;  // keys of virtual_
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_JFR_EVENTS_THREAD_POOL_H_
