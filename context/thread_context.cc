#include "context/thread_context.h"

#include <pthread.h>

#include <atomic>

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

std::atomic<bool> span_timing{true};

// The calling thread's claimed log; TLS is initial-exec so reading it never allocates.
__attribute__((tls_model("initial-exec"))) __thread SpanLog* own_span_log = nullptr;
// Set when every log was taken: the thread then writes untimed rather than retry the lock.
__attribute__((tls_model("initial-exec"))) __thread bool span_log_refused = false;
// The logical thread this thread runs (Mount); the intervals its writes start are that one's.
__attribute__((tls_model("initial-exec"))) __thread uint64_t interval_owner = 0;

// Ends the interval of `block`'s context (its owner is the caller) at the time of the write
// about to happen; returns the log to stamp the new interval's begin in (nullptr: untimed).
SpanLog* EndOpenInterval(const ContextBlock& block, uint64_t* now) {
  if (!span_timing.load(std::memory_order_relaxed)) return nullptr;
  SpanLog* log = ThreadContext::OwnSpanLog();
  if (log == nullptr) return nullptr;
  ContextSnapshot current;
  // The caller is the block's only writer, so the read is always consistent.
  ReadBlock(block, &current, kSameThreadReadAttempts);
  *now = SpanTicks();
  log->EndInterval(current, *now);
  return log;
}

// A block write that also starts the next interval of the span log, inside the seqlock.
class TimedWriter {
 public:
  explicit TimedWriter(ContextBlock* block) : log_(EndOpenInterval(*block, &now_)), writer_(block) {
    if (log_ != nullptr) log_->SetOpenBegin(now_, interval_owner);
  }
  BlockWriter* operator->() { return &writer_; }

 private:
  uint64_t now_ = 0;
  SpanLog* const log_;
  BlockWriter writer_;
};

__attribute__((tls_model("initial-exec"))) __thread OtelThreadRecord* own_otel_record = nullptr;

// A thread that exits without the runtime's end hook (a native thread of the C API) gives its
// record back through this key's destructor; OnThreadEnd clears the key's value first.
void ReleaseOtelRecordAtExit(void* record) {
  ProcessContext* store = Store();
  if (store != nullptr) store->map().otel_records().Release(static_cast<OtelThreadRecord*>(record));
  own_otel_record = nullptr;
}
pthread_key_t otel_record_key;
const bool otel_record_key_created =
    pthread_key_create(&otel_record_key, ReleaseOtelRecordAtExit) == 0;
// Set when every record was taken: the thread then publishes nothing rather than retry the lock.
__attribute__((tls_model("initial-exec"))) __thread bool otel_record_refused = false;

// After a block write: the thread's OpenTelemetry record follows the block (publishing on).
void RefreshOtelRecord(ProcessContext* store, const ContextBlock& block) {
  if (!store->otel_enabled()) return;
  OtelThreadRecord* record = ThreadContext::OwnOtelRecord();
  if (record == nullptr) return;
  ContextSnapshot current;
  ReadBlock(block, &current, kSameThreadReadAttempts);  // our own block: always consistent
  std::string_view values[kAttributeSlots];
  for (int slot = 0; slot < kAttributeSlots; slot++) {
    values[slot] = store->dictionary().ValueOf(current.attributes[slot]);
  }
  WriteOtelRecord(current, values, record);
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
  TimedWriter(block)->SetAttribute(slot, id);
  RefreshOtelRecord(store, *block);
  return ContextWrite::kWritten;
}

ContextWrite ThreadContext::SetTrace(uint64_t trace_high, uint64_t trace_low, uint64_t span_id) {
  ProcessContext* store = Store();
  ContextBlock* block = nullptr;
  const ContextWrite found = FindOwnBlock(store, &block);
  if (found != ContextWrite::kWritten) return found;
  {
    TimedWriter writer(block);
    writer->SetTraceId(trace_high, trace_low);
    writer->SetSpanId(span_id);
  }
  RefreshOtelRecord(store, *block);
  return ContextWrite::kWritten;
}

ContextWrite ThreadContext::SetAll(const ContextSnapshot& context) {
  ProcessContext* store = Store();
  ContextBlock* block = nullptr;
  const ContextWrite found = FindOwnBlock(store, &block);
  if (found != ContextWrite::kWritten) return found;
  TimedWriter(block)->SetAll(context);
  RefreshOtelRecord(store, *block);
  return found;
}

ContextWrite ThreadContext::Clear() {
  ProcessContext* store = Store();
  ContextBlock* block = nullptr;
  const ContextWrite found = FindOwnBlock(store, &block);
  if (found != ContextWrite::kWritten) return found;
  TimedWriter(block)->Clear();
  RefreshOtelRecord(store, *block);
  return found;
}

void ThreadContext::Read(ContextSnapshot* out) {
  ContextBlock* block = nullptr;
  if (FindOwnBlock(Store(), &block) != ContextWrite::kWritten ||
      ReadBlock(*block, out, kSameThreadReadAttempts) != ReadStatus::kConsistent) {
    *out = ContextSnapshot{};
  }
}

void ThreadContext::Mount(uint64_t owner, const SuspendedContext& saved) {
  ProcessContext* store = Store();
  ContextBlock* block = nullptr;
  if (FindOwnBlock(store, &block) != ContextWrite::kWritten) return;
  uint64_t now = 0;
  SpanLog* log = EndOpenInterval(*block, &now);
  interval_owner = owner;
  {
    BlockWriter writer(block);
    if (log != nullptr)
      log->SetOpenBegin(saved.interval_begin != 0 ? saved.interval_begin : now, owner);
    writer.SetAll(saved.context);
  }
  RefreshOtelRecord(store, *block);  // the carrier's record shows the mounted thread's context
}

void ThreadContext::Unmount(SuspendedContext* saved) {
  ProcessContext* store = Store();
  ContextBlock* block = nullptr;
  if (FindOwnBlock(store, &block) != ContextWrite::kWritten) return;
  if (saved == nullptr) {  // the owner ended: so does its interval
    TimedWriter(block)->Clear();
    interval_owner = 0;
    RefreshOtelRecord(store, *block);
    return;
  }
  ReadBlock(*block, &saved->context, kSameThreadReadAttempts);  // its only writer: consistent
  SpanLog* log = span_timing.load(std::memory_order_relaxed) ? OwnSpanLog() : nullptr;
  saved->interval_begin = log != nullptr ? log->open_begin.load(std::memory_order_relaxed) : 0;
  interval_owner = 0;
  {
    BlockWriter writer(block);
    if (log != nullptr) log->SetOpenBegin(SpanTicks(), 0);
    writer.Clear();
  }
  RefreshOtelRecord(store, *block);  // the carrier's own, empty, context
}

void ThreadContext::OnThreadStart(pid_t tid) {
  ProcessContext* store = Store();
  if (store != nullptr) store->map().OnThreadStart(tid);
}

void ThreadContext::OnThreadEnd(pid_t tid) {
  ProcessContext* store = Store();
  if (store == nullptr) return;
  SpanLog* log = own_span_log;
  ContextBlock* block = store->map().BlockFor(tid);
  if (log != nullptr) {
    own_span_log = nullptr;
    ContextSnapshot current{};
    if (block != nullptr) ReadBlock(*block, &current, kSameThreadReadAttempts);
    SpanLogPool::Retire(log, current, SpanTicks());
  }
  if (own_otel_record != nullptr) {
    if (otel_record_key_created) pthread_setspecific(otel_record_key, nullptr);
    store->map().otel_records().Release(own_otel_record);
    own_otel_record = nullptr;
  }
  store->map().OnThreadEnd(tid);
}

OtelThreadRecord* ThreadContext::OwnOtelRecord() {
  if (own_otel_record != nullptr || otel_record_refused) return own_otel_record;
  ProcessContext* store = Store();
  if (store == nullptr || !store->otel_enabled()) return nullptr;
  own_otel_record = store->map().otel_records().Claim();
  otel_record_refused = own_otel_record == nullptr;
  // Without the key (creation failed: no keys left) such a thread keeps its record.
  if (own_otel_record != nullptr && otel_record_key_created) {
    pthread_setspecific(otel_record_key, own_otel_record);
  }
  return own_otel_record;
}

SpanLog* ThreadContext::OwnSpanLog() {
  if (own_span_log != nullptr || span_log_refused || !span_timing.load(std::memory_order_relaxed)) {
    return own_span_log;
  }
  ProcessContext* store = Store();
  if (store == nullptr) return nullptr;
  own_span_log = store->map().span_logs().Claim(CachedTid());
  span_log_refused = own_span_log == nullptr;
  return own_span_log;
}

void ThreadContext::SetSpanTiming(bool enabled) {
  span_timing.store(enabled, std::memory_order_relaxed);
}

bool ThreadContext::SpanTiming() { return span_timing.load(std::memory_order_relaxed); }

std::string ThreadContext::StoreError() {
  std::string error;
  return ProcessContext::Get(&error) != nullptr ? std::string() : error;
}

}  // namespace ctxprof
