#include "profiler/recording/thread_pool.h"

#include "profiler/jfr/jfr_metadata.h"

namespace ctxprof {

uint32_t ThreadPool::Key(int32_t tid, uint32_t chunk, uint64_t* pending_bytes) {
  Slot& slot = by_tid_[tid];
  if (slot.resolved_in_chunk != chunk) {
    ResolvedThread resolved;
    resolver_->Resolve(tid, &resolved);
    const bool known = slot.resolved_in_chunk != 0;
    if (!known || threads_[slot.thread].name != resolved.name ||
        threads_[slot.thread].java_thread_id != resolved.java_thread_id) {
      const uint32_t key = known || tid <= 0 || static_cast<uint32_t>(tid) >= kFirstSpareKey
                               ? next_spare_key_++
                               : static_cast<uint32_t>(tid);
      threads_.push_back(Thread{key, tid, std::move(resolved.name), resolved.java_thread_id, 0});
      slot.thread = threads_.size() - 1;
    }
    slot.resolved_in_chunk = chunk;
  }
  Thread& thread = threads_[slot.thread];
  if (thread.carried_in_chunk != chunk) {
    thread.carried_in_chunk = chunk;
    pending_.push_back(slot.thread);
    *pending_bytes += 16 + 2 * thread.name.size();
  }
  return thread.key;
}

void ThreadPool::WritePending(JfrBuffer* out) {
  if (pending_.empty()) return;
  out->PutVarint(kJfrTypeThread);
  out->PutVarint(pending_.size());
  for (size_t index : pending_) {
    const Thread& thread = threads_[index];
    out->PutVarint(thread.key);
    out->PutString(thread.name);
    out->PutVarint(static_cast<uint64_t>(thread.tid));
    if (thread.java_thread_id > 0) {
      out->PutString(thread.name);
    } else {
      out->PutNullString();  // `jfr print` then shows the OS name and tid
    }
    out->PutVarint(static_cast<uint64_t>(thread.java_thread_id));
  }
  pending_.clear();
}

}  // namespace ctxprof
