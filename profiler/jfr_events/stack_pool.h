// StackPool: stack deduplication and the JFR jdk.types.StackTrace pool.
//
// A stack is identified by a 128-bit fingerprint of its raw frames (two independent hash chains),
// so a lookup touches one table slot and never the stored frames; two different stacks collide
// with probability about n^2 / 2^129 for n distinct stacks. Each distinct raw frame
// (id, bci, kind) is resolved once per recording through the FrameResolver and its method
// interned in the MethodPool.
//
// Memory: every stack is kept as its frames' method keys (to queue the methods) and its pool
// entry's encoded value (written with one copy each time a chunk carries it), side by side;
// about 9 bytes per frame. When they exceed the configured cache bytes at a rotation, DropUnused
// releases the stacks the finished chunk did not use; such a stack, seen again, gets a new key
// (keys are never reused).
//
// Thread safety: none; owned by the JFR writer's thread, which is also the only caller of the
// resolver.
#ifndef CTXPROF_PROFILER_JFR_EVENTS_STACK_POOL_H_
#define CTXPROF_PROFILER_JFR_EVENTS_STACK_POOL_H_

#include <cstdint>
#include <vector>

#include "profiler/jfr/jfr_buffer.h"
#include "profiler/jfr_events/flat_index.h"
#include "profiler/jfr_events/frame_resolver.h"
#include "profiler/jfr_events/method_pool.h"
#include "profiler/jfr_events/pool_state.h"
#include "profiler/sampler/sample.h"

namespace ctxprof {

class StackPool {
 public:
  // `frames` names raw frames; `methods` receives their methods. Both must outlive the pool.
  StackPool(FrameResolver* frames, MethodPool* methods);

  // The key of `sample`'s stack, queued with its methods for chunk `chunk`; adds the estimated
  // bytes of newly queued entries to *pending_bytes.
  uint32_t Key(const SampleRecord& sample, uint32_t chunk, uint64_t* pending_bytes);
  // Releases the frames of every stack that chunk `chunk` did not carry.
  void DropUnused(uint32_t chunk);
  // Frames kept for deduplication, and their bytes.
  size_t cached_frames() const { return cached_frames_; }
  size_t cached_frame_bytes() const { return arena_.size(); }

  // Queues stack `key` (from an earlier Key()) for chunk `chunk` again; false when its frames
  // were dropped (DropUnused), so it can no longer be written.
  bool Carry(uint32_t key, uint32_t chunk, uint64_t* pending_bytes);

  bool has_pending() const { return !pool_.pending.empty(); }
  // Appends the queued stacks as the StackTrace pool (nothing when none) and clears the queue.
  void WritePending(JfrBuffer* out);

 private:
  struct Frame {
    uint32_t method_key;
    int32_t line_number;
    int32_t bci;
    JfrFrameType type;
  };
  struct Stack {
    uint64_t hash;
    uint64_t check;
    size_t first_byte;  // in arena_: frame_count method keys, then encoded_bytes
    uint32_t frame_count;
    uint32_t encoded_bytes;
    bool dropped;  // frames released by DropUnused; the key is retired
  };
  struct StackSlot {
    uint64_t hash = 0;   // places the slot
    uint64_t check = 0;  // second, independent hash: with `hash` the stack's fingerprint
    uint32_t key = 0;    // 0 = empty
  };
  // A resolved frame, cached by its raw identity.
  struct CachedFrame {
    uint64_t id;
    int32_t bci;
    FrameKind kind;
    Frame frame;
  };

  // Queues stack `key` and its methods.
  void Mark(uint32_t key, uint32_t chunk, uint64_t* pending_bytes);
  // Rebuilds the stack table for `slots` slots (a power of two) from the live stacks.
  void RebuildStackTable(size_t slots);
  Frame ResolveFrame(const RawFrame& raw);

  FrameResolver* const resolver_;
  MethodPool* const methods_;
  std::vector<Stack> stacks_;  // stacks_[key - 1]
  // Per stack, side by side (a stack the chunk carries again is read in one sweep): its
  // frames' method keys (uint32_t each), then its StackTrace entry after the key (truncated
  // flag, frame count, frames) as written.
  std::vector<uint8_t> arena_;
  size_t cached_frames_ = 0;
  JfrBuffer scratch_;                   // a new stack's encoding
  std::vector<StackSlot> stack_table_;  // live stacks, open addressing, at most half full
  size_t live_stacks_ = 0;
  std::vector<CachedFrame> frame_cache_;
  FlatIndex frame_index_{4096};   // positions in frame_cache_
  ResolvedFrame resolved_frame_;  // the resolver's output, reused
  PoolState pool_;
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_JFR_EVENTS_STACK_POOL_H_
