#include "profiler/recording/thread_pool.h"

#include "profiler/jfr/jfr_metadata.h"

namespace ctxprof {

uint32_t ThreadPool::Key(int32_t tid, uint32_t chunk, uint64_t* pending_bytes) {
  Slot& slot = by_tid_[tid];
  if (slot.resolved_in_chunk != chunk) {
    ResolvedThread resolved;
    resolver_->Resolve(tid, &resolved);
    if (slot.key == 0 || threads_[slot.key - 1].name != resolved.name ||
        threads_[slot.key - 1].java_thread_id != resolved.java_thread_id) {
      threads_.push_back(Thread{std::move(resolved.name), tid, resolved.java_thread_id});
      slot.key = static_cast<uint32_t>(threads_.size());
    }
    slot.resolved_in_chunk = chunk;
  }
  if (pool_.Mark(slot.key, chunk)) *pending_bytes += 16 + 2 * threads_[slot.key - 1].name.size();
  return slot.key;
}

void ThreadPool::WritePending(JfrBuffer* out) {
  if (pool_.pending.empty()) return;
  PutPoolHeader(kJfrTypeThread, pool_, out);
  for (uint32_t key : pool_.pending) {
    const Thread& thread = threads_[key - 1];
    out->PutVarint(key);
    out->PutString(thread.name);
    out->PutVarint(static_cast<uint64_t>(thread.tid));
    if (thread.java_thread_id > 0) {
      out->PutString(thread.name);
    } else {
      out->PutNullString();  // `jfr print` then shows the OS name and tid
    }
    out->PutVarint(static_cast<uint64_t>(thread.java_thread_id));
  }
  pool_.pending.clear();
}

}  // namespace ctxprof
