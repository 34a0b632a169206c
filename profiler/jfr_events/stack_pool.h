// StackPool: stack deduplication and the JFR jdk.types.StackTrace pool.
//
// A stack is identified by a 128-bit fingerprint of its raw frames (two independent hash chains,
// each a bijection of any one frame, so stacks that differ in one frame never collide; others
// collide with probability about n^2 / 2^129 for n distinct stacks). A lookup reads one table
// slot, which also says whether the current chunk already carries the stack, and never the
// stored frames. Each distinct raw frame (id, bci, kind) is resolved once per recording through
// the FrameResolver and its method interned in the MethodPool.
//
// Memory: every stack is one record in an arena: its key, its frames' method keys (to queue the
// methods) and its pool entry's encoded value (copied as is each time a chunk carries it); about
// 10 bytes per frame, on huge pages with the table (HugePageAllocator). A chunk that carries a
// stack again reads its record twice: the method keys at the next Key() call (or QueueMethods),
// when the prefetch Key issued has brought them in, and the encoded value in WritePending, which
// prefetches a few records ahead. When the records exceed the configured cache bytes at a rotation,
// DropUnused releases the stacks the finished chunk did not use; such a stack, seen again, gets a
// new key (keys are never reused).
//
// Thread safety: none; owned by the JFR writer's thread, which is also the only caller of the
// resolver.
#ifndef CTXPROF_PROFILER_JFR_EVENTS_STACK_POOL_H_
#define CTXPROF_PROFILER_JFR_EVENTS_STACK_POOL_H_

#include <cstdint>
#include <vector>

#include "profiler/jfr/jfr_buffer.h"
#include "profiler/jfr_events/frame_resolver.h"
#include "profiler/jfr_events/huge_page_allocator.h"
#include "profiler/jfr_events/method_pool.h"
#include "profiler/sampler/sample.h"

namespace ctxprof {

class StackPool {
 public:
  // `frames` names raw frames; `methods` receives their methods. Both must outlive the pool.
  StackPool(FrameResolver* frames, MethodPool* methods);

  // The key of `sample`'s stack, queued for chunk `chunk`; adds the estimated bytes of newly
  // queued entries to *pending_bytes. A stack the chunk carries again gets its methods queued
  // by the next call of Key or QueueMethods.
  uint32_t Key(const SampleRecord& sample, uint32_t chunk, uint64_t* pending_bytes);
  // Queues the methods of every queued stack whose methods are not queued yet. A checkpoint
  // calls it before it counts the pools it writes.
  void QueueMethods(uint64_t* pending_bytes);
  // Releases the records of every stack that chunk `chunk` did not carry. Nothing may be
  // queued (call it after WritePending).
  void DropUnused(uint32_t chunk);
  // Frames kept for deduplication, and the bytes of their records.
  size_t cached_frames() const { return cached_frames_; }
  size_t cached_frame_bytes() const { return arena_.size() * sizeof(uint64_t); }

  // Queues stack `key` (from an earlier Key()) for chunk `chunk` again, with its methods; false
  // when its record was dropped (DropUnused), so it can no longer be written.
  bool Carry(uint32_t key, uint32_t chunk, uint64_t* pending_bytes);

  bool has_pending() const { return !pending_.empty(); }
  // Appends the queued stacks as the StackTrace pool (nothing when none) and clears the queue.
  // QueueMethods must have run since the last Key.
  void WritePending(JfrBuffer* out);

 private:
  // A stack's record in arena_: this header, then frame_count method keys (uint32_t), then
  // encoded_bytes of its StackTrace entry after the key (truncated flag, frame count, frames),
  // padded to 8 bytes (so that headers are aligned).
  struct RecordHeader {
    uint64_t hash;  // finds its slot again (Carry)
    uint32_t key;
    uint16_t frame_count;    // <= kMaxStackDepth
    uint16_t encoded_bytes;  // <= 3 + 16 bytes a frame
  };
  static_assert(kMaxStackDepth <= UINT16_MAX && 3 + 16 * kMaxStackDepth <= UINT16_MAX,
                "a record's header holds its frame count and its encoded size");
  struct StackSlot {
    uint64_t hash = 0;   // places the slot
    uint64_t check = 0;  // second, independent hash: with `hash` the stack's fingerprint
    uint32_t key = 0;    // 0 = empty
    uint32_t carried_in_chunk = 0;
    uint64_t record = 0;  // byte offset in arena_
  };
  // A resolved frame, cached by its raw identity (id, bci, kind) in the frame table.
  struct CachedFrame {
    uint64_t id = 0;
    int32_t bci = 0;
    FrameKind kind = FrameKind::kNative;
    JfrFrameType type = JfrFrameType::kInterpreted;
    uint32_t method_key = 0;  // 0 = empty slot (method keys start at 1)
    int32_t line_number = 0;
    int32_t written_bci = 0;  // the bytecode index the pool entry says
  };
  static constexpr uint64_t kNoRecord = UINT64_MAX;

  // Queues the stack of `slot` for chunk `chunk`, its methods for later (Key's comment).
  void Queue(StackSlot* slot, uint32_t chunk);
  // Queues the methods of the record at `record` for chunk `chunk`.
  void QueueMethodsOf(uint64_t record, uint32_t chunk, uint64_t* pending_bytes);
  // Adds a record for a stack not seen before and returns its offset.
  uint64_t AddRecord(const SampleRecord& sample, uint32_t count, bool truncated, uint64_t hash,
                     uint32_t key);
  // Rebuilds the stack table for `slots` slots (a power of two) from its live slots.
  void RebuildStackTable(size_t slots);
  // The resolved frame of `raw`, whose FrameHash is `hash`.
  CachedFrame ResolveFrame(const RawFrame& raw, uint64_t hash);
  void PrefetchFrameSlot(uint64_t hash) const {
    __builtin_prefetch(&frame_table_[hash & (frame_table_.size() - 1)]);
  }
  // Doubles the frame table.
  void GrowFrameTable();
  RecordHeader HeaderAt(uint64_t record) const;
  const uint8_t* Bytes() const { return reinterpret_cast<const uint8_t*>(arena_.data()); }
  // The encoded entry of the record at `record`, whose header is `header`.
  const uint8_t* EncodedAt(uint64_t record, const RecordHeader& header) const {
    return Bytes() + record + sizeof(RecordHeader) + header.frame_count * sizeof(uint32_t);
  }

  FrameResolver* const resolver_;
  MethodPool* const methods_;
  // Huge pages: both are read at random, a slot and a record per sample.
  using Arena = std::vector<uint64_t, HugePageAllocator<uint64_t>>;  // 8-byte words
  using StackTable = std::vector<StackSlot, HugePageAllocator<StackSlot>>;
  Arena arena_;                          // records
  std::vector<uint64_t> record_of_key_;  // by key; kNoRecord once dropped (index 0 unused)
  StackTable stack_table_;               // live stacks, open addressing, at most half full
  size_t live_stacks_ = 0;
  size_t cached_frames_ = 0;
  std::vector<uint64_t> pending_;          // records of the stacks queued for the next checkpoint
  uint64_t methods_unqueued_ = kNoRecord;  // the queued record whose methods are not queued yet
  uint32_t methods_unqueued_chunk_ = 0;
  JfrBuffer scratch_;                     // a new stack's encoding
  std::vector<uint32_t> method_keys_;     // a new stack's method keys
  std::vector<uint64_t> frame_hashes_;    // a new stack's FrameHash values
  std::vector<CachedFrame> frame_table_;  // open addressing, at most half full
  size_t distinct_frames_ = 0;
  ResolvedFrame resolved_frame_;  // the resolver's output, reused
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_JFR_EVENTS_STACK_POOL_H_
