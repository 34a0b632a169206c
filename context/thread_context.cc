#include "context/thread_context.h"

#include "context/process_context.h"

namespace ctxprof {

namespace {

ProcessContext* Store() {
  std::string ignored;  // StoreError() says it when someone asks
  return ProcessContext::Get(&ignored);
}

// The calling thread's block, or why there is none.
ContextWrite FindOwnBlock(ProcessContext* store, ContextBlock** block) {
  if (store == nullptr) return ContextWrite::kNoStore;
  *block = store->map().BlockFor(CachedTid());
  return *block != nullptr ? ContextWrite::kWritten : ContextWrite::kNoBlock;
}

bool IsRegisteredSlot(ProcessContext* store, int slot) {
  return slot >= 0 && slot < store->attributes().size();
}

}  // namespace

ContextBlock* ThreadContext::OwnBlock() {
  ContextBlock* block = nullptr;
  FindOwnBlock(Store(), &block);
  return block;
}

ContextWrite ThreadContext::SetAttribute(int slot, const char* value) {
  ProcessContext* store = Store();
  if (store == nullptr) return ContextWrite::kNoStore;
  // Checked before interning, so that a bad call does not use up dictionary space.
  if (!IsRegisteredSlot(store, slot)) return ContextWrite::kBadSlot;
  return SetAttributeId(
      slot, value == nullptr ? Dictionary::kUnsetId : store->dictionary().Intern(value));
}

ContextWrite ThreadContext::SetAttributeId(int slot, uint32_t id) {
  ProcessContext* store = Store();
  ContextBlock* block = nullptr;
  const ContextWrite found = FindOwnBlock(store, &block);
  if (found != ContextWrite::kWritten) return found;
  if (!IsRegisteredSlot(store, slot)) return ContextWrite::kBadSlot;
  BlockWriter(block).SetAttribute(slot, id);
  return ContextWrite::kWritten;
}

ContextWrite ThreadContext::SetTrace(uint64_t trace_high, uint64_t trace_low, uint64_t span_id) {
  ContextBlock* block = nullptr;
  const ContextWrite found = FindOwnBlock(Store(), &block);
  if (found != ContextWrite::kWritten) return found;
  BlockWriter writer(block);
  writer.SetTraceId(trace_high, trace_low);
  writer.SetSpanId(span_id);
  return ContextWrite::kWritten;
}

ContextWrite ThreadContext::SetAll(const ContextSnapshot& context) {
  ContextBlock* block = nullptr;
  const ContextWrite found = FindOwnBlock(Store(), &block);
  if (found == ContextWrite::kWritten) BlockWriter(block).SetAll(context);
  return found;
}

ContextWrite ThreadContext::Clear() {
  ContextBlock* block = nullptr;
  const ContextWrite found = FindOwnBlock(Store(), &block);
  if (found == ContextWrite::kWritten) BlockWriter(block).Clear();
  return found;
}

void ThreadContext::Read(ContextSnapshot* out) {
  ContextBlock* block = nullptr;
  if (FindOwnBlock(Store(), &block) != ContextWrite::kWritten ||
      ReadBlock(*block, out, kSameThreadReadAttempts) != ReadStatus::kConsistent) {
    *out = ContextSnapshot{};
  }
}

void ThreadContext::OnThreadStart(pid_t tid) {
  ProcessContext* store = Store();
  if (store != nullptr) store->map().OnThreadStart(tid);
}

void ThreadContext::OnThreadEnd(pid_t tid) {
  ProcessContext* store = Store();
  if (store != nullptr) store->map().OnThreadEnd(tid);
}

std::string ThreadContext::StoreError() {
  std::string error;
  return ProcessContext::Get(&error) != nullptr ? std::string() : error;
}

}  // namespace ctxprof
