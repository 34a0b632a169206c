// FlatIndex: finds entries that live in a caller's vector by hash, with open addressing and
// linear probing in one array of 8-byte slots kept at most half full.
//
// Why not std::unordered_map: with a trace id per request nearly every sample the background
// thread handles is a key of its own, and a node-based map pays a malloc per new key and, per
// lookup, a bucket load plus a node load on lines that are cold by then (a profile:
// docs/SAMPLER.md, "The background thread's profile"). Here a lookup reads
// one slot line and, on a hash match, the caller's entry; an insert allocates only when the
// table doubles.
//
// A slot holds the entry's position in the caller's vector plus one (0 = empty) and the low 32
// bits of its hash, which place it again when the table doubles and skip most entries whose
// key differs without reading them. Entries are never removed one by one; Clear() forgets all.
//
// Thread safety: none; the owner serializes calls.
#ifndef CTXPROF_PROFILER_JFR_EVENTS_FLAT_INDEX_H_
#define CTXPROF_PROFILER_JFR_EVENTS_FLAT_INDEX_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

namespace ctxprof {

// A 64-bit finalizer (MurmurHash3's fmix64 without its last round): spreads every input bit
// over the low bits the index uses.
inline uint64_t MixBits(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return h;
}

// Hashes an object that is nothing but fields (no padding bytes) as 8-byte words.
template <typename T>
uint64_t HashObjectWords(const T& value) {
  static_assert(std::has_unique_object_representations_v<T> && sizeof(T) % 8 == 0,
                "every byte must be a field's, in whole words");
  const char* bytes = reinterpret_cast<const char*>(&value);
  uint64_t hash = sizeof(T);
  for (size_t at = 0; at < sizeof(T); at += 8) {
    uint64_t word;
    memcpy(&word, bytes + at, sizeof(word));
    hash = (hash ^ word) * 0x9E3779B97F4A7C15ULL;
    hash = (hash << 31) | (hash >> 33);
  }
  return MixBits(hash);
}

class FlatIndex {
 public:
  static constexpr uint32_t kAbsent = UINT32_MAX;

  // `initial_slots`: a power of two, at least 2.
  explicit FlatIndex(size_t initial_slots = 1024) : slots_(initial_slots) {}

  // The position of the entry whose hash is `hash` and for which `equals(position)` holds, or
  // kAbsent.
  template <typename Equals>
  uint32_t Find(uint64_t hash, Equals equals) const {
    return slots_[Probe(hash, equals)].position_plus_one - 1;  // 0 - 1 = kAbsent
  }

  // Find(), but where there is no such entry, records `new_position` (the caller appends that
  // entry next) and returns it. `*inserted` says which happened.
  template <typename Equals>
  uint32_t FindOrInsert(uint64_t hash, uint32_t new_position, Equals equals, bool* inserted) {
    Slot& slot = slots_[Probe(hash, equals)];
    *inserted = slot.position_plus_one == 0;
    if (!*inserted) return slot.position_plus_one - 1;
    slot = Slot{static_cast<uint32_t>(hash), new_position + 1};
    if (++size_ * 2 > slots_.size()) Grow();
    return new_position;
  }

  // Forgets every entry; keeps the table's size, so a refill of the same size allocates nothing.
  void Clear() {
    if (size_ == 0) return;
    slots_.assign(slots_.size(), Slot{0, 0});
    size_ = 0;
  }

  size_t size() const { return size_; }

 private:
  struct Slot {
    uint32_t tag;
    uint32_t position_plus_one;
  };

  // The slot of the matching entry, or the empty one where it would go.
  template <typename Equals>
  size_t Probe(uint64_t hash, Equals& equals) const {
    const uint32_t tag = static_cast<uint32_t>(hash);
    const size_t mask = slots_.size() - 1;
    size_t index = tag & mask;
    for (; slots_[index].position_plus_one != 0; index = (index + 1) & mask) {
      const Slot& slot = slots_[index];
      if (slot.tag == tag && equals(slot.position_plus_one - 1)) break;
    }
    return index;
  }

  void Grow() {
    std::vector<Slot> table(slots_.size() * 2);
    const size_t mask = table.size() - 1;
    for (const Slot& slot : slots_) {
      if (slot.position_plus_one == 0) continue;
      size_t index = slot.tag & mask;
      while (table[index].position_plus_one != 0) index = (index + 1) & mask;
      table[index] = slot;
    }
    slots_.swap(table);
  }

  std::vector<Slot> slots_;  // size: a power of two
  size_t size_ = 0;
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_JFR_EVENTS_FLAT_INDEX_H_
