// The 64-byte per-thread context block and its seqlock protocol.
//
// This header is the single definition of the block layout. The Java side does not hard-code
// offsets: it asks the native library for the constants in `kContextLayout` (through JNI) and
// derives its ByteBuffer offsets from them.
//
// Layout (little-endian, 64 bytes, 64-byte aligned so a block never straddles a cache line):
//
//   offset  size  field
//        0     8  sequence        even = stable, odd = a write is in progress
//        8     8  trace_id_high   upper 64 bits of the 128-bit trace id (0 = none)
//       16     8  trace_id_low    lower 64 bits of the 128-bit trace id
//       24     8  span_id         0 = none
//       32  4x8  attributes[8]    dictionary ids (context/dictionary.h); 0 = unset
//
// Concurrency contract (a seqlock with exactly one writer per block):
//  * Writer: only the thread that owns the block (the thread whose tid indexes it) writes it,
//    through BlockWriter. A write is: sequence += 1 (now odd), release fence, field stores,
//    sequence += 1 (now even) with release ordering. The release fence keeps the odd store
//    ahead of the field stores; the final release store keeps the field stores ahead of the even
//    store. Both also act as compiler barriers, which is what matters for a signal handler that
//    interrupts the writer on its own thread.
//  * Readers: a signal handler on the owning thread, or any other thread (the wall sampler).
//    ReadBlock() loads the sequence with acquire, copies the fields with relaxed loads, issues an
//    acquire fence and reloads the sequence. The copy is returned only if both loads saw the
//    same even value; that pairs with the writer's release operations, so the copy is exactly
//    one completed write, never a mix. Otherwise it retries a bounded number of times and
//    reports kBusy (a write was in progress: odd sequence) or kTorn (writes kept completing
//    during the copy). A same-thread reader interrupted a write that cannot progress until the
//    handler returns, so it gets kBusy after its attempts, never a spin.
//  * Every field is a std::atomic accessed with relaxed or stronger ordering, so there is no data
//    race in the C++ sense (TSan-clean) and on x86-64 each access is a plain mov.
//  * Readers never fault: blocks live in a mapping that is never unmapped (context_map.h), and
//    ReadBlock() only touches the block it is given. It allocates nothing, takes no lock and uses
//    no thread-local storage, so it is async-signal-safe.
#ifndef CTXPROF_CONTEXT_CONTEXT_BLOCK_H_
#define CTXPROF_CONTEXT_CONTEXT_BLOCK_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace ctxprof {

inline constexpr int kAttributeSlots = 8;
inline constexpr size_t kContextBlockSize = 64;

struct alignas(kContextBlockSize) ContextBlock {
  std::atomic<uint64_t> sequence;
  std::atomic<uint64_t> trace_id_high;
  std::atomic<uint64_t> trace_id_low;
  std::atomic<uint64_t> span_id;
  std::atomic<uint32_t> attributes[kAttributeSlots];
};

static_assert(sizeof(ContextBlock) == kContextBlockSize, "a block is exactly 64 bytes");
static_assert(alignof(ContextBlock) == kContextBlockSize, "a block is cache-line aligned");
static_assert(std::atomic<uint64_t>::is_always_lock_free, "lock-free 64-bit atomics required");
static_assert(std::atomic<uint32_t>::is_always_lock_free, "lock-free 32-bit atomics required");

// The layout as numbers, for the Java side and for documentation tests.
struct ContextLayout {
  uint32_t block_size;
  uint32_t sequence_offset;
  uint32_t trace_id_high_offset;
  uint32_t trace_id_low_offset;
  uint32_t span_id_offset;
  uint32_t attributes_offset;
  uint32_t attribute_size;
  uint32_t attribute_slots;
};

inline constexpr ContextLayout kContextLayout = {
    kContextBlockSize,
    offsetof(ContextBlock, sequence),
    offsetof(ContextBlock, trace_id_high),
    offsetof(ContextBlock, trace_id_low),
    offsetof(ContextBlock, span_id),
    offsetof(ContextBlock, attributes),
    sizeof(uint32_t),
    kAttributeSlots,
};

// A plain copy of a block's fields: what a sample carries. All zero = no context.
struct ContextSnapshot {
  uint64_t trace_id_high;
  uint64_t trace_id_low;
  uint64_t span_id;
  uint32_t attributes[kAttributeSlots];

  bool empty() const;
  bool operator==(const ContextSnapshot& other) const;
  bool operator!=(const ContextSnapshot& other) const { return !(*this == other); }
};

// Writes one block under the seqlock. Construct it on the owning thread, set fields, and let it
// go out of scope: the destructor publishes the write. Not copyable; never nest two on one block.
// Cost: two sequence stores plus one store per field (no locked instruction on x86-64).
class BlockWriter {
 public:
  explicit BlockWriter(ContextBlock* block)
      : block_(block), sequence_(block->sequence.load(std::memory_order_relaxed)) {
    block_->sequence.store(sequence_ + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
  }
  // Only the owner writes the sequence, so the value read in the constructor is still current.
  ~BlockWriter() { block_->sequence.store(sequence_ + 2, std::memory_order_release); }
  BlockWriter(const BlockWriter&) = delete;
  BlockWriter& operator=(const BlockWriter&) = delete;

  void SetTraceId(uint64_t high, uint64_t low) {
    block_->trace_id_high.store(high, std::memory_order_relaxed);
    block_->trace_id_low.store(low, std::memory_order_relaxed);
  }
  void SetSpanId(uint64_t span_id) { block_->span_id.store(span_id, std::memory_order_relaxed); }
  // `slot` must be in [0, kAttributeSlots); callers validate slots from user input first.
  void SetAttribute(int slot, uint32_t id) {
    block_->attributes[slot].store(id, std::memory_order_relaxed);
  }
  void SetAll(const ContextSnapshot& context) {
    SetTraceId(context.trace_id_high, context.trace_id_low);
    SetSpanId(context.span_id);
#pragma GCC unroll 8
    for (int i = 0; i < kAttributeSlots; i++) SetAttribute(i, context.attributes[i]);
  }
  // Stores constants rather than copying a zeroed snapshot: cheaper, and no store-forwarding
  // stall from a vector-zeroed temporary.
  void Clear() {
    SetTraceId(0, 0);
    SetSpanId(0);
#pragma GCC unroll 8  // a rolled loop of 4-byte stores measured 3x slower
    for (int i = 0; i < kAttributeSlots; i++) SetAttribute(i, 0);
  }

 private:
  ContextBlock* const block_;
  const uint64_t sequence_;  // the even value before this write
};

enum class ReadStatus : uint8_t {
  kConsistent,  // `out` holds exactly one completed write (or the initial all-zero state)
  kBusy,        // every attempt saw a write in progress; `out` is zeroed
  kTorn,        // writes completed during every attempt; `out` is zeroed
};

// Copies `block` into `out` under the seqlock, trying at most `max_attempts` (>= 1) times.
// Async-signal-safe. Never returns a mix of two writes: on kBusy/kTorn `out` is all zero.
ReadStatus ReadBlock(const ContextBlock& block, ContextSnapshot* out, int max_attempts);

// Attempts a reader should use: one for a handler reading its own thread's block (the write it
// interrupted cannot finish), a few for a reader on another thread.
inline constexpr int kSameThreadReadAttempts = 1;
inline constexpr int kOtherThreadReadAttempts = 8;

}  // namespace ctxprof

#endif  // CTXPROF_CONTEXT_CONTEXT_BLOCK_H_
