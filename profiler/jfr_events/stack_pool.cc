#include "profiler/jfr_events/stack_pool.h"

#include <algorithm>
#include <cstring>

#include "profiler/jfr/jfr_metadata.h"
#include "profiler/jfr_events/flat_index.h"  // MixBits

namespace ctxprof {
namespace {

uint64_t FrameHash(const RawFrame& frame) {
  return MixBits(frame.id ^ (static_cast<uint64_t>(static_cast<uint32_t>(frame.bci)) << 40) ^
                 (static_cast<uint64_t>(frame.kind) << 32));
}

// A signed 32-bit field as the JDK encodes it: the two's complement masked to 32 bits.
uint64_t IntBits(int32_t value) { return static_cast<uint32_t>(value); }

uint64_t RotateLeft(uint64_t value, int bits) { return (value << bits) | (value >> (64 - bits)); }

// One frame into the two chains. Each step is a bijection of the chain's value and of each
// input, so two stacks that differ in one frame differ in both chains; the rotations bring
// the multiplications' well-mixed high bits down for the next frame.
void HashFrame(const RawFrame& frame, uint64_t* hash, uint64_t* check) {
  const uint64_t extra = (static_cast<uint64_t>(static_cast<uint32_t>(frame.bci)) << 8) |
                         static_cast<uint8_t>(frame.kind);
  *hash = RotateLeft((*hash ^ frame.id) * 0x9E3779B97F4A7C15ULL, 31) + extra;
  *check = RotateLeft((*check + frame.id) * 0xC2B2AE3D27D4EB4FULL, 29) ^ extra;
}

struct Fingerprint {
  uint64_t hash;
  uint64_t check;
};

// Even and odd frames go into chains of their own, so that a frame's multiplications do not
// wait for the previous frame's: hashing a stack costs about a cycle per frame, not five.
Fingerprint FingerprintOf(const RawFrame* frames, uint32_t count, bool truncated) {
  const uint64_t seed = count * 2 + (truncated ? 1 : 0);
  uint64_t even_hash = seed, odd_hash = ~seed;
  uint64_t even_check = seed ^ 0x94D049BB133111EBULL, odd_check = seed ^ 0xBF58476D1CE4E5B9ULL;
  uint32_t i = 0;
  for (; i + 1 < count; i += 2) {
    HashFrame(frames[i], &even_hash, &even_check);
    HashFrame(frames[i + 1], &odd_hash, &odd_check);
  }
  if (i < count) HashFrame(frames[i], &even_hash, &even_check);
  return Fingerprint{MixBits(even_hash ^ MixBits(odd_hash)),
                     MixBits(even_check + MixBits(odd_check))};
}

// Fetches the cache line at `address` ahead of its use. GCC deletes a loop that does nothing but
// prefetch (-ffinite-loops: a prefetch is no side effect); the empty volatile asm statement is
// one, and keeps such loops.
void Prefetch(const void* address) {
  __builtin_prefetch(address);
  __asm__ volatile("");
}

// Fetches the cache lines of [begin, begin + bytes), at most eight.
void PrefetchBytes(const uint8_t* begin, size_t bytes) {
  const uint8_t* end = begin + std::min<size_t>(bytes, 8 * 64);
  for (const uint8_t* line = begin; line < end; line += 64) Prefetch(line);
  if (bytes > 0) Prefetch(end - 1);  // the last line, where `begin` is not aligned
}

}  // namespace

StackPool::StackPool(FrameResolver* frames, MethodPool* methods)
    : resolver_(frames),
      methods_(methods),
      record_of_key_(1, kNoRecord),
      stack_table_(4096),
      frame_table_(4096) {}

StackPool::RecordHeader StackPool::HeaderAt(uint64_t record) const {
  RecordHeader header;
  memcpy(&header, Bytes() + record, sizeof(header));
  return header;
}

uint32_t StackPool::Key(const SampleRecord& sample, uint32_t chunk, uint64_t* pending_bytes) {
  // The previous call's stack: its record has had a whole sample's time to arrive.
  if (methods_unqueued_ != kNoRecord) QueueMethods(pending_bytes);
  const uint32_t count = std::min<uint32_t>(sample.frame_count, kMaxStackDepth);
  const bool truncated = (sample.flags & kSampleTruncated) != 0;
  const Fingerprint print = FingerprintOf(sample.frames, count, truncated);

  // Open addressing with linear probing, at most half full.
  const size_t mask = stack_table_.size() - 1;
  size_t index = print.hash & mask;
  for (; stack_table_[index].key != 0; index = (index + 1) & mask) {
    StackSlot& slot = stack_table_[index];
    if (slot.hash == print.hash && slot.check == print.check) {
      if (slot.carried_in_chunk != chunk) {
        Queue(&slot, chunk);
        PrefetchBytes(Bytes() + slot.record, sizeof(RecordHeader) + count * sizeof(uint32_t));
        methods_unqueued_ = slot.record;
        methods_unqueued_chunk_ = chunk;
      }
      return slot.key;
    }
  }

  const uint32_t key = static_cast<uint32_t>(record_of_key_.size());
  const uint64_t record = AddRecord(sample, count, truncated, print.hash, key);
  record_of_key_.push_back(record);
  StackSlot& slot = stack_table_[index];
  slot = StackSlot{print.hash, print.check, key, 0, record};
  Queue(&slot, chunk);
  QueueMethodsOf(record, chunk, pending_bytes);  // its frames were just resolved: no wait
  if (++live_stacks_ * 2 > stack_table_.size()) RebuildStackTable(stack_table_.size() * 2);
  return key;
}

void StackPool::Queue(StackSlot* slot, uint32_t chunk) {
  slot->carried_in_chunk = chunk;
  pending_.push_back(slot->record);
}

void StackPool::QueueMethods(uint64_t* pending_bytes) {
  if (methods_unqueued_ == kNoRecord) return;
  QueueMethodsOf(methods_unqueued_, methods_unqueued_chunk_, pending_bytes);
  methods_unqueued_ = kNoRecord;
}

void StackPool::QueueMethodsOf(uint64_t record, uint32_t chunk, uint64_t* pending_bytes) {
  const RecordHeader header = HeaderAt(record);
  *pending_bytes += 4 + header.encoded_bytes;
  methods_->MarkAll(Bytes() + record + sizeof(RecordHeader), header.frame_count, chunk,
                    pending_bytes);
}

uint64_t StackPool::AddRecord(const SampleRecord& sample, uint32_t count, bool truncated,
                              uint64_t hash, uint32_t key) {
  method_keys_.resize(count);
  scratch_.clear();
  scratch_.PutByte(truncated ? 1 : 0);
  scratch_.PutVarint(count);
  // A new stack's frames are scattered over the frame table: their slots are fetched
  // kFramesAhead frames ahead, so that the misses overlap.
  constexpr uint32_t kFramesAhead = 16;
  frame_hashes_.resize(count);
  for (uint32_t i = 0; i < count; i++) {
    frame_hashes_[i] = FrameHash(sample.frames[i]);
    if (i < kFramesAhead) PrefetchFrameSlot(frame_hashes_[i]);
  }
  for (uint32_t i = 0; i < count; i++) {
    if (i + kFramesAhead < count) PrefetchFrameSlot(frame_hashes_[i + kFramesAhead]);
    const CachedFrame frame = ResolveFrame(sample.frames[i], frame_hashes_[i]);
    method_keys_[i] = frame.method_key;
    scratch_.PutVarint(frame.method_key);
    scratch_.PutVarint(IntBits(frame.line_number));
    scratch_.PutVarint(IntBits(frame.written_bci));
    scratch_.PutVarint(static_cast<uint32_t>(frame.type));
  }
  // One resize of the arena, in words: its allocator is not std::allocator, so the vector
  // fills and copies element by element.
  const uint64_t record = arena_.size() * sizeof(uint64_t);
  const size_t keys_bytes = count * sizeof(uint32_t);
  const size_t bytes = sizeof(RecordHeader) + keys_bytes + scratch_.size();
  arena_.resize(arena_.size() + (bytes + sizeof(uint64_t) - 1) / sizeof(uint64_t));
  uint8_t* out = reinterpret_cast<uint8_t*>(arena_.data()) + record;
  const RecordHeader header{hash, key, static_cast<uint16_t>(count),
                            static_cast<uint16_t>(scratch_.size())};
  memcpy(out, &header, sizeof(header));
  // An empty stack has no keys and no frames: memcpy must not see their (null) buffers.
  if (keys_bytes != 0) memcpy(out + sizeof(header), method_keys_.data(), keys_bytes);
  if (scratch_.size() != 0) {
    memcpy(out + sizeof(header) + keys_bytes, scratch_.data(), scratch_.size());
  }
  cached_frames_ += count;
  return record;
}

bool StackPool::Carry(uint32_t key, uint32_t chunk, uint64_t* pending_bytes) {
  if (key == 0 || key >= record_of_key_.size() || record_of_key_[key] == kNoRecord) return false;
  QueueMethods(pending_bytes);
  const uint64_t hash = HeaderAt(record_of_key_[key]).hash;
  const size_t mask = stack_table_.size() - 1;
  size_t index = hash & mask;
  while (stack_table_[index].key != key) index = (index + 1) & mask;  // it is there: not dropped
  StackSlot& slot = stack_table_[index];
  if (slot.carried_in_chunk != chunk) {
    Queue(&slot, chunk);
    QueueMethodsOf(slot.record, chunk, pending_bytes);
  }
  return true;
}

void StackPool::RebuildStackTable(size_t slots) {
  StackTable table(slots);
  const size_t mask = slots - 1;
  for (const StackSlot& slot : stack_table_) {
    if (slot.key == 0) continue;
    size_t index = slot.hash & mask;
    while (table[index].key != 0) index = (index + 1) & mask;
    table[index] = slot;
  }
  stack_table_.swap(table);
}

void StackPool::DropUnused(uint32_t chunk) {
  Arena kept;
  live_stacks_ = 0;
  cached_frames_ = 0;
  for (StackSlot& slot : stack_table_) {
    if (slot.key == 0) continue;
    if (slot.carried_in_chunk != chunk) {
      record_of_key_[slot.key] = kNoRecord;
      slot.key = 0;
      continue;
    }
    const RecordHeader header = HeaderAt(slot.record);
    const size_t bytes =
        (sizeof(RecordHeader) + header.frame_count * sizeof(uint32_t) + header.encoded_bytes + 7) &
        ~size_t{7};
    const uint64_t record = kept.size() * sizeof(uint64_t);
    const uint64_t* words = arena_.data() + slot.record / sizeof(uint64_t);
    kept.insert(kept.end(), words, words + bytes / sizeof(uint64_t));
    slot.record = record;
    record_of_key_[slot.key] = record;
    cached_frames_ += header.frame_count;
    live_stacks_++;
  }
  arena_.swap(kept);  // the old, larger allocation goes away with `kept`
  size_t slots = 4096;
  while (slots < 4 * live_stacks_) slots *= 2;
  RebuildStackTable(slots);
}

StackPool::CachedFrame StackPool::ResolveFrame(const RawFrame& raw, uint64_t hash) {
  // Frames recur across stacks: the resolver sees each (id, bci, kind) once per recording.
  const size_t mask = frame_table_.size() - 1;
  size_t index = hash & mask;
  for (; frame_table_[index].method_key != 0; index = (index + 1) & mask) {
    const CachedFrame& cached = frame_table_[index];
    if (cached.id == raw.id && cached.bci == raw.bci && cached.kind == raw.kind) return cached;
  }
  resolved_frame_ = ResolvedFrame();
  resolver_->Resolve(raw, &resolved_frame_);
  // Bytecode index and line belong to Java frames; other frames get 0 for both, as
  // async-profiler writes them: a varint 0 is one byte, -1 five, and C/C++ and kernel frames are
  // about half of the frames a JVM's stacks hold (JIT compiler threads). `jfr print` then shows
  // "line: 0" after them, as after async-profiler's.
  const JfrFrameType type = resolved_frame_.type;
  const bool java = type == JfrFrameType::kInterpreted || type == JfrFrameType::kJitCompiled ||
                    type == JfrFrameType::kInlined;
  const CachedFrame frame{raw.id,
                          raw.bci,
                          raw.kind,
                          type,
                          methods_->Key(resolved_frame_),
                          java ? resolved_frame_.line_number : 0,
                          java ? raw.bci : 0};
  frame_table_[index] = frame;
  if (++distinct_frames_ * 2 > frame_table_.size()) GrowFrameTable();
  return frame;
}

void StackPool::GrowFrameTable() {
  std::vector<CachedFrame> table(frame_table_.size() * 2);
  const size_t mask = table.size() - 1;
  for (const CachedFrame& frame : frame_table_) {
    if (frame.method_key == 0) continue;
    const RawFrame raw{frame.id, frame.bci, frame.kind};
    size_t index = FrameHash(raw) & mask;
    while (table[index].method_key != 0) index = (index + 1) & mask;
    table[index] = frame;
  }
  frame_table_.swap(table);
}

void StackPool::WritePending(JfrBuffer* out) {
  if (pending_.empty()) return;
  out->PutVarint(kJfrTypeStackTrace);
  out->PutVarint(pending_.size());
  // The records a chunk carries again are scattered over the arena: their headers are fetched
  // eight records ahead, their encoded entries (where the header says) four ahead.
  for (size_t i = 0; i < pending_.size(); i++) {
    if (i + 8 < pending_.size()) __builtin_prefetch(Bytes() + pending_[i + 8]);
    if (i + 4 < pending_.size()) {
      const RecordHeader ahead = HeaderAt(pending_[i + 4]);
      PrefetchBytes(EncodedAt(pending_[i + 4], ahead), ahead.encoded_bytes);
    }
    const RecordHeader header = HeaderAt(pending_[i]);
    out->PutVarint(header.key);
    out->PutBytes(EncodedAt(pending_[i], header), header.encoded_bytes);
  }
  pending_.clear();
}

}  // namespace ctxprof
