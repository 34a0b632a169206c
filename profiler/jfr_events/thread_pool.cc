#include "profiler/jfr_events/thread_pool.h"

#include "profiler/jfr/jfr_metadata.h"

namespace ctxprof {

uint32_t ThreadPool::Key(int32_t tid, uint64_t virtual_thread_id, uint32_t chunk,
                         uint64_t* pending_bytes) {
  if (virtual_thread_id != 0) return VirtualKey(virtual_thread_id, chunk, pending_bytes);
  Slot& slot = by_tid_[tid];
  if (slot.resolved_in_chunk != chunk) {
    ResolvedThread resolved;
    resolver_->Resolve(tid, &resolved);
    const bool known = slot.resolved_in_chunk != 0;
    if (!known || threads_[slot.thread].name != resolved.name ||
        threads_[slot.thread].java_thread_id != resolved.java_thread_id) {
      // The JDK's key if it has one, else the tid, for the first identity only.
      const uint32_t natural = resolved.jdk_key != 0 ? resolved.jdk_key
                               : tid > 0             ? static_cast<uint32_t>(tid)
                                                     : 0;
      const uint32_t key = !known && natural != 0 && natural < first_spare_key_ &&
                                   natural_keys_.insert(natural).second
                               ? natural
                               : next_spare_key_++;
      threads_.push_back(
          Thread{key, tid, std::move(resolved.name), resolved.java_thread_id, false, 0});
      slot.thread = threads_.size() - 1;
    }
    slot.resolved_in_chunk = chunk;
  }
  Thread& thread = threads_[slot.thread];
  if (Carry(&thread, chunk, pending_bytes)) pending_.push_back(slot.thread);
  return thread.key;
}

uint32_t ThreadPool::VirtualKey(uint64_t id, uint32_t chunk, uint64_t* pending_bytes) {
  VirtualSlot& slot = virtual_[id];
  if (slot.resolved_in_chunk != chunk) {
    std::string name = resolver_->VirtualThreadName(id);
    if (slot.resolved_in_chunk == 0 || slot.thread.name != name) {
      // The JDK's key (its id) for the first identity, and again when it comes back forgotten.
      const bool natural = slot.resolved_in_chunk == 0 && id < first_spare_key_ &&
                           resolver_->JdkKeysVirtualThreadsById() &&
                           (virtual_natural_keys_.count(id) != 0 ||
                            natural_keys_.insert(static_cast<uint32_t>(id)).second);
      if (natural) virtual_natural_keys_.insert(id);
      slot.thread = Thread{natural ? static_cast<uint32_t>(id) : next_spare_key_++,
                           0,
                           std::move(name),
                           static_cast<int64_t>(id),
                           true,
                           0};
    }
    slot.resolved_in_chunk = chunk;
  }
  if (Carry(&slot.thread, chunk, pending_bytes)) pending_virtual_.push_back(id);
  return slot.thread.key;
}

bool ThreadPool::Carry(Thread* thread, uint32_t chunk, uint64_t* pending_bytes) {
  if (thread->carried_in_chunk == chunk) return false;
  thread->carried_in_chunk = chunk;
  *pending_bytes += 16 + 2 * thread->name.size();
  return true;
}

void ThreadPool::ForgetVirtualThreads(uint32_t chunk) {
  for (auto it = virtual_.begin(); it != virtual_.end();) {
    if (it->second.thread.carried_in_chunk + 1 < chunk) {
      it = virtual_.erase(it);
    } else {
      ++it;
    }
  }
}

void ThreadPool::PutEntry(const Thread& thread, JfrBuffer* out) {
  out->PutVarint(thread.key);
  if (thread.is_virtual) {
    out->PutNullString();  // no OS thread of its own
  } else {
    out->PutString(thread.name);
  }
  out->PutVarint(static_cast<uint64_t>(thread.tid));
  if (thread.is_virtual || thread.java_thread_id > 0) {
    out->PutString(thread.name);
  } else {
    out->PutNullString();  // `jfr print` then shows the OS name and tid
  }
  out->PutVarint(static_cast<uint64_t>(thread.java_thread_id));
  out->PutByte(thread.is_virtual ? 1 : 0);
}

void ThreadPool::WritePending(JfrBuffer* out) {
  if (!has_pending()) return;
  out->PutVarint(kJfrTypeThread);
  out->PutVarint(pending_.size() + pending_virtual_.size());
  for (size_t index : pending_) PutEntry(threads_[index], out);
  for (uint64_t id : pending_virtual_) PutEntry(virtual_.at(id).thread, out);
  pending_.clear();
  pending_virtual_.clear();
}

}  // namespace ctxprof
