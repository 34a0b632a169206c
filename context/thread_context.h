// ThreadContext: the one owner of "the calling thread's context" in the process store
// (process_context.h). The C API (profiler/ctxprof_api.cc), the JNI methods (jni/java_api.cc) and
// the JVM layer's thread and virtual-thread hooks (jni/jvm_agent.cc, jni/virtual_threads.cc) all
// write through it; Java platform threads get their block's address from OwnBlock() once and
// then write it in place with the same protocol (java/src/io/ctxprof/ThreadContext.java).
//
// Which block: the one indexed by the calling thread's kernel tid, found with CachedTid()
// (initial-exec TLS: one gettid per thread, then a plain load) in the process-wide ContextMap.
//
// Thread safety: every call writes (or reads) only the calling thread's own block, as the
// block's single seqlock writer (context_block.h). So nothing here takes a lock, except
// SetAttribute the first time it sees a value (the dictionary's insert lock, bounded), and calls
// on different threads never touch the same block. A signal handler interrupting a write on the
// same thread, and the wall sampler reading from another thread, see the whole previous or the
// whole new context. Not async-signal-safe (the store is created on first use): never call
// from a signal handler.
//
// Timed spans (span_log.h): while span timing is on (the default; SetSpanTiming), every write
// first ends the interval of the context it replaces in the thread's span log, stamped with
// SpanTicks(), and starts the next one; thread end ends the last one and gives the log back.
// A thread's log is claimed on its first timed write (one lock, once per thread), cached in
// initial-exec TLS, and shared with the Java writer of the same thread (OwnSpanLog()).
//
// OpenTelemetry (ProcessContext::PublishOtel): while publishing is on, every write also rewrites
// the thread's OTEP 4947 record from the block (otel_thread_record.h), claiming the record and
// setting otel_thread_ctx_v1 on the thread's first write; thread end (the hook, else a pthread
// key destructor) gives the record back.
//
// A thread whose tid is at or beyond the map's capacity has no block (ContextMap::BlockFor
// counts the lookup in out_of_range_lookups): every write is dropped with kNoBlock, reads see
// an empty context, and that thread's samples carry no context. When the store itself could
// not be created (its address space reservation failed), calls return kNoStore and
// StoreError() says why.
#ifndef CTXPROF_CONTEXT_THREAD_CONTEXT_H_
#define CTXPROF_CONTEXT_THREAD_CONTEXT_H_

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "context/context_block.h"
#include "context/otel_thread_record.h"
#include "context/span_log.h"

namespace ctxprof {

// What a write did.
enum class ContextWrite : uint8_t {
  kWritten,
  kBadSlot,  // the slot is not one of a registered attribute: nothing written
  kNoBlock,  // the calling thread's tid is beyond the context map: nothing written (counted)
  kNoStore,  // the process store could not be created (StoreError()): nothing written
};

class ThreadContext {
 public:
  // The calling thread's block; nullptr when it has none (kNoBlock or kNoStore above).
  static ContextBlock* OwnBlock();

  // Sets registered attribute `slot` to `value`, interned in the process dictionary (a full
  // dictionary stores Dictionary::kOverflowId); nullptr clears the attribute.
  static ContextWrite SetAttribute(int slot, const char* value);
  // The same with a dictionary id the caller already has (the Java side caches them).
  static ContextWrite SetAttributeId(int slot, uint32_t id);
  // Trace id (128 bits) and span id; zeros mean "none". Attributes keep their values.
  static ContextWrite SetTrace(uint64_t trace_high, uint64_t trace_low, uint64_t span_id);
  // The whole context as one write (a virtual thread mounting, a scope restoring its saved one).
  static ContextWrite SetAll(const ContextSnapshot& context);
  static ContextWrite Clear();
  // Copies the calling thread's context into *out; all zero when the thread has no block. The
  // caller is the block's only writer, so the copy is always one complete write.
  static void Read(ContextSnapshot* out);

  // A carrier thread running other logical threads (a JVM's virtual threads; `owner` is the
  // runtime's id of one, never 0). Mount: the carrier's own interval ends, `saved.context` is
  // written, and the owner's interval goes on from `saved.interval_begin` (now, if 0), so its
  // spans keep their real begin wherever it ran before. Unmount: the owner's context and the
  // begin of its open interval go to *saved, not to the log (the interval stays open while the
  // owner is not mounted), or with saved == nullptr (the owner ended) the interval ends now;
  // then the carrier's own, empty, context is written.
  struct SuspendedContext {
    ContextSnapshot context{};
    uint64_t interval_begin = 0;
  };
  static void Mount(uint64_t owner, const SuspendedContext& saved);
  static void Unmount(SuspendedContext* saved);

  // Thread lifecycle: clear the block of `tid`, which must be the calling thread's (the
  // runtime's thread start and end hooks run on the thread itself). Clearing at start covers a
  // thread that died without an end hook: a recycled tid never inherits a dead thread's
  // context. Clearing at end stops a finished thread's context from showing in samples of
  // whatever the tid runs next.
  static void OnThreadStart(pid_t tid);
  static void OnThreadEnd(pid_t tid);

  // The calling thread's span log, claimed on first use; nullptr when span timing is off, the
  // store is missing or every log is taken (SpanLogPool::claim_failures()).
  static SpanLog* OwnSpanLog();
  // Process-wide: whether writes are timed (default true). Off, a write costs what it did
  // before spans were timed; intervals already open stay open until the next timed write.
  static void SetSpanTiming(bool enabled);
  static bool SpanTiming();

  // The calling thread's OpenTelemetry record, claimed (and published in otel_thread_ctx_v1) on
  // first use; nullptr while publishing is off, without a store, or when every record is taken.
  static OtelThreadRecord* OwnOtelRecord();

  // Why the store could not be created; "" when it exists.
  static std::string StoreError();
};

}  // namespace ctxprof

#endif  // CTXPROF_CONTEXT_THREAD_CONTEXT_H_
