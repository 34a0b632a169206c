// SpanIntervals: turns timed spans (context/span_log.h, drained and converted to the session's
// clock) into ctxprof.Context events whose startTime and duration are the span's real begin and
// end, and joins each recorded event to the span open on its thread at its time.
//
// Per thread, spans arrive in order and never overlap (each context write ends one and starts the
// next). A record (sample, allocation, or a wait, by its start) of a thread joins the pending span
// that contains its time, which makes that span "triggered". A record whose span has not been
// drained yet (it was still open) is remembered, and triggers the span that turns out to contain
// it; one that falls before a later-arriving span's begin is in no span.
//
// A record that comes after its span was settled (a wall repeat of a sampler thread that woke
// over the reorder window late on a loaded machine) still joins it: each thread's last
// kLateJoinSpans settled spans are kept, and one not written yet is written then, whole. A
// thread whose records come late is one that sat still, so its span is among its last ones.
//
// Where a thread's log was full, its spans of a stretch are lost (SpanInterval::lost_since): a
// record in the stretch keeps the context it read itself (Join's fallback), and once settled
// (or at the segment end) each run of such records with one context is written from the first
// to just after the last, inside the stretch; a virtual thread's record in its carrier's lost
// stretch likewise. The thread's records joined before the loss was known move there too (a virtual
// thread's keep their guess, written at the chunk end).
//
// When a span is written: triggered spans at every segment end (WriteTriggered), so each flush
// carries the spans of its records; with write_all also every other span once Settle(horizon)
// says no more record can fall inside (every record up to `horizon` has been joined). ContextIds
// are per chunk, so a record must find its span's Context event in its own chunk: at a chunk end
// a triggered span ending after the last horizon is written only up to just after its last
// record, and the rest once settled (or at a later segment end, if triggered again). Each part
// of a span is written once. A record falling in a span written whole at a flush of an earlier
// chunk (it straddled that flush and the rotation) gets no context.
//
// A span still open holds records that no drained span claims yet. At a segment end the part of
// it up to just after its last such record is written (the thread's open interval, as the drain
// last read it: SetOpen), so each flush still carries the contexts of its records; the span's
// record, when it arrives, is written from that cut on (if triggered), so intervals of one thread
// never overlap. This also bounds what is remembered per thread to one segment's records. A
// record after the drain's read (a dump writes every record up to now) took its own context's
// id: at a chunk end that context is written up to just after it, again as a cut. "Just after"
// is JfrChunkWriter::TicksJustAfter: far enough that every reader converts the record inside.
//
// Thread safety: none; owned by the JFR writer's thread.
#ifndef CTXPROF_PROFILER_JFR_EVENTS_SPAN_INTERVALS_H_
#define CTXPROF_PROFILER_JFR_EVENTS_SPAN_INTERVALS_H_

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "context/context_block.h"
#include "profiler/jfr/jfr_chunk_writer.h"
#include "profiler/jfr_events/attribute_value_pool.h"
#include "profiler/jfr_events/context_ids.h"
#include "profiler/jfr_events/event_encoder.h"

namespace ctxprof {

// One closed span of thread `tid` (of the virtual thread it ran, when not 0), in session clock
// ticks: [begin_ticks, end_ticks).
struct SpanInterval {
  int32_t tid;
  uint64_t begin_ticks;
  uint64_t end_ticks;
  ContextSnapshot context;
  uint64_t virtual_thread_id = 0;
  bool closed = true;  // false: still open at the recording's end (SpanDrain::DrainOpen)
  // Not 0: the thread's log was full before this span, and its intervals in [lost_since,
  // begin_ticks) were lost (context/span_log.h). Records in there keep the context they read.
  uint64_t lost_since = 0;
};

// Whose spans an interval is, as one number for maps: a thread's (bit 63 set, its tid below) or
// a virtual thread's (its id, whichever carrier ran it).
inline uint64_t SpanOwnerKey(int32_t tid, uint64_t virtual_thread_id) {
  return virtual_thread_id != 0 ? virtual_thread_id
                                : (uint64_t{1} << 63) | static_cast<uint32_t>(tid);
}

class SpanIntervals {
 public:
  // Events go to `chunk`'s out(); `thread_key(tid, virtual_thread_id)` gives (and queues for
  // the chunk) the thread pool key. Every pointer must outlive this object.
  SpanIntervals(JfrChunkWriter* chunk, EventEncoder* encoder, AttributeValuePool* values,
                ContextIds* ids, size_t attribute_count, bool write_all,
                std::function<uint32_t(int32_t, uint64_t)> thread_key)
      : chunk_(chunk),
        encoder_(encoder),
        values_(values),
        ids_(ids),
        attribute_count_(attribute_count),
        write_all_(write_all),
        thread_key_(std::move(thread_key)) {}

  // Threads whose contexts are timed: their records join spans, not runs of samples. A thread
  // stays timed for the rest of the recording (its last records come after its log is retired).
  void AddTimedThreads(const std::unordered_set<int32_t>& tids) {
    timed_.insert(tids.begin(), tids.end());
  }
  bool IsTimed(int32_t tid) const { return timed_.count(tid) != 0; }
  // Attribute names registered since: at a chunk start only (intervals written after it carry
  // the new slots' values, which every snapshot holds).
  void set_attribute_count(size_t count) { attribute_count_ = count; }

  void Add(const SpanInterval& span);
  // Joins a record of timed thread `tid` (run by virtual thread `virtual_thread_id`, if not 0)
  // at `ticks`. Returns the contextId of its span, or the id of `fallback` (the context the
  // record carries) when the span is not known yet, 0 when the record is in no span. A late
  // record may write its settled span (pool bytes added to `pending_bytes`).
  uint64_t Join(int32_t tid, uint64_t virtual_thread_id, uint64_t ticks,
                const ContextSnapshot& fallback, uint64_t* pending_bytes);
  // The thread's interval still open when the drain read it at `read_ticks`: it began at
  // `begin_ticks` with `context` (empty: no span is open), run by `virtual_thread_id` (then the
  // carrier's own has none). Records before its begin that no span claimed are in none, and
  // are forgotten.
  void SetOpen(int32_t tid, uint64_t virtual_thread_id, uint64_t begin_ticks, uint64_t read_ticks,
               const ContextSnapshot& context);
  void Settle(uint64_t horizon, uint64_t* pending_bytes);
  // At a segment end; `chunk_end` when it ends the chunk.
  void WriteTriggered(bool chunk_end, uint64_t* pending_bytes);
  // Before a chunk that ends at `ticks` (jfrsync= with repository=: the JDK's recorder rotated
  // there, and its events of the chunk's period must find their spans in the chunk): every span
  // open at `ticks`, drained or still open as last read, is written up to it, and later again
  // from its begin, not from `ticks`: a JDK event that began before the boundary and ended after
  // it is in the next chunk, which then holds its span too. So each chunk file stands alone,
  // and a reader of the concatenated chunks sees such a span's first part twice (the same
  // begin and context). Every record before `ticks` must have been joined (Settle(ticks)).
  void CutAt(uint64_t ticks, uint64_t* pending_bytes);

  uint64_t spans_written() const { return spans_written_; }

  // How many of a thread's settled spans stay joinable by late records.
  static constexpr size_t kLateJoinSpans = 16;

 private:
  // A span's part not written yet, [begin_ticks, end_ticks) (its thread is the Thread's). What
  // Settle and Join read of every span comes first, on one cache line.
  struct Pending {
    uint64_t begin_ticks;
    uint64_t end_ticks;
    uint64_t last_record = 0;    // the latest record that fell in it
    uint32_t written_chunk = 0;  // the chunk it was written (whole) in
    bool triggered = false;      // a record fell in its part not written yet
    bool written = false;
    bool cut = false;     // its start was written at a chunk end: the rest follows
    ContextIds::Kept id;  // of `context`, for its records and its interval
    ContextSnapshot context;
  };
  // A record that no known span held, given the id of its own context (Join's fallback).
  struct Guess {
    uint64_t ticks;
    ContextSnapshot context;
    ContextIds::Kept id;
  };
  // A stretch of a thread's time whose spans its full log lost.
  struct Loss {
    uint64_t begin_ticks;
    uint64_t end_ticks;
  };
  // An interval CutOpen or WriteGuessed wrote at a segment end.
  struct WrittenPart {
    uint64_t begin_ticks;
    uint64_t end_ticks;
  };
  // A record in a Loss, given the id of `context`; its interval must end by `limit`.
  struct LostRecord {
    uint64_t ticks;
    uint64_t limit;
    ContextSnapshot context;
    ContextIds::Kept id;
  };
  // A thread's spans by begin in a ring: a steady stream of spans reuses the memory the settled
  // ones leave, and settling moves none (a vector erasing its front moved every pending span at
  // every Settle; a deque allocates and frees a block every few spans).
  class SpanRing {
   public:
    size_t size() const { return size_; }
    Pending& operator[](size_t index) { return slots_[(head_ + index) & (slots_.size() - 1)]; }
    void PushBack(const Pending& pending);
    // Puts `pending` at `index`, the spans from there on moving up one.
    void Insert(size_t index, const Pending& pending);
    void DropFront(size_t count);
    // The index of the first span in [from, to) that begins after `ticks` (`to` if none).
    size_t FirstBeginningAfter(size_t from, size_t to, uint64_t ticks);

   private:
    std::vector<Pending> slots_;  // empty or a power of two
    size_t head_ = 0;             // the slot of index 0
    size_t size_ = 0;
  };
  struct Thread {
    // Up to kLateJoinSpans settled spans, joinable by late records, then from first_pending on
    // the pending ones.
    SpanRing spans;
    size_t first_pending = 0;
    std::vector<uint64_t> unjoined;  // record times after the last span's end
    std::vector<Guess> guessed;    // this chunk's, by time, until a span or a chunk end covers them
    std::vector<LostRecord> lost;  // this segment's, by time
    uint64_t lost_written_until = 0;  // their intervals were written up to here
    std::vector<Loss> losses;         // the last kLateJoinSpans, by time
    uint64_t last_end = 0;            // end of the last span added
    uint64_t written_until = 0;       // the open span was written up to here (a cut)
    // The intervals CutOpen and WriteGuessed wrote, the last kLateJoinSpans: below
    // written_until, a late record in a loss outside them can still have an interval of its own.
    std::vector<WrittenPart> written_parts;
    // The open interval as last read: [open_begin, open_read) had open_context.
    uint64_t open_begin = 0;
    uint64_t open_read = 0;
    ContextSnapshot open_context{};
    ContextIds::Kept open_id;  // of open_context
  };

  // Spans are kept per SpanOwnerKey: a virtual thread's intervals are logged by whichever
  // carrier it ran on when each ended (span_log.h), so they can arrive out of order (Add sorts).
  // threads_[owner], through the last one found: the drain brings a thread's spans together.
  Thread& ThreadOf(uint64_t owner);
  void SetThreadOpen(Thread* thread, uint64_t begin_ticks, uint64_t read_ticks,
                     const ContextSnapshot& context);
  void Write(uint64_t owner, Pending* pending, uint64_t* pending_bytes);
  // Joins a record at `ticks` that its thread's pending spans do not hold to a settled span;
  // 0 when none holds it or it cannot carry it.
  uint64_t JoinSettled(uint64_t owner, Thread* thread, uint64_t ticks, uint64_t* pending_bytes);
  // Notes that `thread`'s spans in [begin_ticks, end_ticks) were lost, and gives the records
  // there their own contexts.
  void AddLoss(Thread* thread, uint64_t begin_ticks, uint64_t end_ticks);
  // Puts `record` into `thread`'s lost records, in time order.
  static void AddLost(Thread* thread, const LostRecord& record);
  // The losses of thread `tid`'s log, which hold its virtual threads' records too; `thread` is
  // the record's own (the carrier's when virtual_thread_id is 0).
  const std::vector<Loss>& CarrierLosses(int32_t tid, uint64_t virtual_thread_id,
                                         const Thread& thread);
  // The id of `context` for a record of `thread` at `ticks` in one of `losses`, whose interval
  // ends by `limit` too; 0 if in none.
  uint64_t JoinLost(Thread* thread, const std::vector<Loss>& losses, uint64_t ticks,
                    const ContextSnapshot& context, uint64_t limit = UINT64_MAX);
  // Appends `item` to `items`, which keeps the last kLateJoinSpans.
  template <typename Item>
  static void KeepLast(std::vector<Item>* items, const Item& item) {
    items->push_back(item);
    if (items->size() > kLateJoinSpans) items->erase(items->begin());
  }
  // Writes the intervals of the records joined in losses before `up_to` (at a segment end, all).
  void WriteLost(uint64_t owner, Thread* thread, uint64_t up_to, uint64_t* pending_bytes);
  // Writes the part of `thread`'s open span that holds its unjoined records.
  void CutOpen(uint64_t owner, Thread* thread, uint64_t* pending_bytes);
  // At a chunk end: writes the contexts that records took from their own snapshot (their span
  // not drained yet), so that the chunk carries every contextId its records use.
  void WriteGuessed(uint64_t owner, Thread* thread, uint64_t* pending_bytes);
  // `id` keeps the id of `context` (ContextIds::Kept).
  void WriteInterval(uint64_t owner, uint64_t begin_ticks, uint64_t end_ticks,
                     const ContextSnapshot& context, ContextIds::Kept* id, uint64_t* pending_bytes);

  JfrChunkWriter* const chunk_;
  EventEncoder* const encoder_;
  AttributeValuePool* const values_;
  ContextIds* const ids_;
  size_t attribute_count_;
  const bool write_all_;
  const std::function<uint32_t(int32_t, uint64_t)> thread_key_;
  std::unordered_set<int32_t> timed_;
  std::unordered_map<uint64_t, Thread> threads_;  // by SpanOwnerKey
  Thread* last_thread_ = nullptr;  // ThreadOf's last (map nodes stay put until erased)
  uint64_t last_owner_ = 0;
  uint64_t spans_written_ = 0;
  uint64_t settled_ = 0;   // every record up to here has been joined (Settle)
  bool any_loss_ = false;  // AddLoss ran: only then may a carrier's losses be worth looking up
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_JFR_EVENTS_SPAN_INTERVALS_H_
