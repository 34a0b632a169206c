#include "profiler/recording/thread_pool.h"

#include "profiler/jfr/jfr_metadata.h"

namespace ctxprof {

uint32_t ThreadPool::Key(int32_t tid, uint64_t virtual_thread_id, uint32_t chunk,
                         uint64_t* pending_bytes) {
  if (virtual_thread_id != 0) {
    VirtualThread& thread = virtual_[virtual_thread_id];
    if (thread.resolved_in_chunk != chunk) {
      std::string name = resolver_->VirtualThreadName(virtual_thread_id);
      if (thread.key == 0 || thread.name != name) {
        thread.key = next_virtual_key_++;
        thread.name = std::move(name);
      }
      thread.resolved_in_chunk = chunk;
    }
    if (thread.carried_in_chunk != chunk) {
      thread.carried_in_chunk = chunk;
      pending_virtual_.push_back(virtual_thread_id);
      *pending_bytes += 24 + thread.name.size();
    }
    return thread.key;
  }
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

void ThreadPool::ForgetVirtualThreads(uint32_t chunk) {
  for (auto it = virtual_.begin(); it != virtual_.end();) {
    if (it->second.carried_in_chunk + 1 < chunk) {
      it = virtual_.erase(it);
    } else {
      ++it;
    }
  }
}

void ThreadPool::WritePending(JfrBuffer* out) {
  if (!has_pending()) return;
  out->PutVarint(kJfrTypeThread);
  out->PutVarint(pool_.pending.size() + pending_virtual_.size());
  for (uint64_t id : pending_virtual_) {
    const VirtualThread& thread = virtual_.at(id);
    out->PutVarint(thread.key);
    out->PutNullString();  // no OS thread of its own
    out->PutVarint(0);
    out->PutString(thread.name);
    out->PutVarint(id);
    out->PutByte(1);
  }
  pending_virtual_.clear();
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
    out->PutByte(0);  // not virtual
  }
  pool_.pending.clear();
}

}  // namespace ctxprof
