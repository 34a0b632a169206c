#include "profiler/jfr_events/stack_pool.h"

#include <algorithm>
#include <cstring>

#include "profiler/jfr/jfr_metadata.h"
#include "profiler/jfr_events/flat_index.h"

namespace ctxprof {
namespace {

uint64_t FrameHash(uint64_t id, int32_t bci, FrameKind kind) {
  return MixBits(id ^ (static_cast<uint64_t>(static_cast<uint32_t>(bci)) << 40) ^
                 (static_cast<uint64_t>(kind) << 32));
}

// A signed 32-bit field as the JDK encodes it: the two's complement masked to 32 bits.
uint64_t IntBits(int32_t value) { return static_cast<uint32_t>(value); }

}  // namespace

StackPool::StackPool(FrameResolver* frames, MethodPool* methods)
    : resolver_(frames), methods_(methods), stack_table_(4096) {}

uint32_t StackPool::Key(const SampleRecord& sample, uint32_t chunk, uint64_t* pending_bytes) {
  const uint32_t count = std::min<uint32_t>(sample.frame_count, kMaxStackDepth);
  const bool truncated = (sample.flags & kSampleTruncated) != 0;
  uint64_t hash = MixBits(count * 2 + (truncated ? 1 : 0));
  uint64_t check = 0x9E3779B97F4A7C15ULL ^ count ^ (truncated ? 1ULL << 63 : 0);
  for (uint32_t i = 0; i < count; i++) {
    const RawFrame& frame = sample.frames[i];
    const uint64_t extra = (static_cast<uint64_t>(static_cast<uint32_t>(frame.bci)) << 8) |
                           static_cast<uint8_t>(frame.kind);
    hash = MixBits(hash ^ frame.id) + extra;
    check = ((check ^ frame.id) * 0xC2B2AE3D27D4EB4FULL + extra);
    check = (check << 31) | (check >> 33);
  }
  check = MixBits(check);

  // Open addressing with linear probing, at most half full.
  const size_t mask = stack_table_.size() - 1;
  size_t index = hash & mask;
  for (; stack_table_[index].key != 0; index = (index + 1) & mask) {
    const StackSlot& slot = stack_table_[index];
    if (slot.hash == hash && slot.check == check) {
      Mark(slot.key, chunk, pending_bytes);
      return slot.key;
    }
  }

  const size_t first_byte = arena_.size();
  arena_.resize(first_byte + count * sizeof(uint32_t));
  scratch_.clear();
  scratch_.PutByte(truncated ? 1 : 0);
  scratch_.PutVarint(count);
  for (uint32_t i = 0; i < count; i++) {
    const Frame frame = ResolveFrame(sample.frames[i]);
    memcpy(&arena_[first_byte + i * sizeof(uint32_t)], &frame.method_key, sizeof(uint32_t));
    scratch_.PutVarint(frame.method_key);
    scratch_.PutVarint(IntBits(frame.line_number));
    scratch_.PutVarint(IntBits(frame.bci));
    scratch_.PutVarint(static_cast<uint32_t>(frame.type));
  }
  arena_.insert(arena_.end(), scratch_.data(), scratch_.data() + scratch_.size());
  cached_frames_ += count;
  stacks_.push_back(
      Stack{hash, check, first_byte, count, static_cast<uint32_t>(scratch_.size()), false});
  const uint32_t key = static_cast<uint32_t>(stacks_.size());
  stack_table_[index] = StackSlot{hash, check, key};
  if (++live_stacks_ * 2 > stack_table_.size()) RebuildStackTable(stack_table_.size() * 2);
  Mark(key, chunk, pending_bytes);
  return key;
}

void StackPool::Mark(uint32_t key, uint32_t chunk, uint64_t* pending_bytes) {
  if (!pool_.Mark(key, chunk)) return;
  const Stack& stack = stacks_[key - 1];
  *pending_bytes += 4 + stack.encoded_bytes;
  methods_->MarkAll(arena_.data() + stack.first_byte, stack.frame_count, chunk, pending_bytes);
}

bool StackPool::Carry(uint32_t key, uint32_t chunk, uint64_t* pending_bytes) {
  if (key == 0 || key > stacks_.size() || stacks_[key - 1].dropped) return false;
  Mark(key, chunk, pending_bytes);
  return true;
}

void StackPool::RebuildStackTable(size_t slots) {
  std::vector<StackSlot> table(slots);
  const size_t mask = slots - 1;
  for (size_t k = 0; k < stacks_.size(); k++) {
    const Stack& stack = stacks_[k];
    if (stack.dropped) continue;
    size_t index = stack.hash & mask;
    while (table[index].key != 0) index = (index + 1) & mask;
    table[index] = StackSlot{stack.hash, stack.check, static_cast<uint32_t>(k + 1)};
  }
  stack_table_.swap(table);
}

void StackPool::DropUnused(uint32_t chunk) {
  std::vector<uint8_t> kept;
  live_stacks_ = 0;
  cached_frames_ = 0;
  for (size_t k = 0; k < stacks_.size(); k++) {
    Stack& stack = stacks_[k];
    if (stack.dropped) continue;
    if (!pool_.CarriedIn(static_cast<uint32_t>(k + 1), chunk)) {
      stack.dropped = true;
      continue;
    }
    const size_t first_byte = kept.size();
    const auto begin = arena_.begin() + stack.first_byte;
    kept.insert(kept.end(), begin,
                begin + stack.frame_count * sizeof(uint32_t) + stack.encoded_bytes);
    stack.first_byte = first_byte;
    cached_frames_ += stack.frame_count;
    live_stacks_++;
  }
  arena_.swap(kept);  // the old, larger allocation goes away with `kept`
  size_t slots = 4096;
  while (slots < 4 * live_stacks_) slots *= 2;
  RebuildStackTable(slots);
}

StackPool::Frame StackPool::ResolveFrame(const RawFrame& raw) {
  // Frames recur across stacks: the resolver sees each (id, bci, kind) once per recording.
  bool inserted;
  const uint32_t at = frame_index_.FindOrInsert(
      FrameHash(raw.id, raw.bci, raw.kind), static_cast<uint32_t>(frame_cache_.size()),
      [this, &raw](uint32_t position) {
        const CachedFrame& cached = frame_cache_[position];
        return cached.id == raw.id && cached.bci == raw.bci && cached.kind == raw.kind;
      },
      &inserted);
  if (!inserted) return frame_cache_[at].frame;
  resolved_frame_ = ResolvedFrame();
  resolver_->Resolve(raw, &resolved_frame_);
  // Bytecode index and line belong to Java frames; other frames get 0 for both, as
  // async-profiler writes them: a varint 0 is one byte, -1 five, and C/C++ and kernel frames are
  // about half of the frames a JVM's stacks hold (JIT compiler threads). `jfr print` then shows
  // "line: 0" after them, as after async-profiler's.
  const JfrFrameType type = resolved_frame_.type;
  const bool java = type == JfrFrameType::kInterpreted || type == JfrFrameType::kJitCompiled ||
                    type == JfrFrameType::kInlined;
  const Frame frame{methods_->Key(resolved_frame_), java ? resolved_frame_.line_number : 0,
                    java ? raw.bci : 0, type};
  frame_cache_.push_back(CachedFrame{raw.id, raw.bci, raw.kind, frame});
  return frame;
}

void StackPool::WritePending(JfrBuffer* out) {
  if (pool_.pending.empty()) return;
  PutPoolHeader(kJfrTypeStackTrace, pool_, out);
  for (uint32_t key : pool_.pending) {
    const Stack& stack = stacks_[key - 1];
    out->PutVarint(key);
    out->PutBytes(arena_.data() + stack.first_byte + stack.frame_count * sizeof(uint32_t),
                  stack.encoded_bytes);
  }
  pool_.pending.clear();
}

}  // namespace ctxprof
