// FlatIndex against std::unordered_map on the same keys: through growth, with hashes that
// collide in every bit (the caller's equality must decide) and across Clear().
#include "profiler/jfr_events/flat_index.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <unordered_map>
#include <vector>

namespace ctxprof {
namespace {

// Entries live in the caller's vector; the index maps a key to its position.
class KeyedVector {
 public:
  explicit KeyedVector(uint64_t (*hash)(uint64_t)) : hash_(hash), index_(2) {}

  // The position of `key`, appended if new.
  uint32_t PositionOf(uint64_t key, bool* inserted) {
    const uint32_t at = index_.FindOrInsert(
        hash_(key), static_cast<uint32_t>(keys_.size()),
        [this, key](uint32_t position) { return keys_[position] == key; }, inserted);
    if (*inserted) keys_.push_back(key);
    return at;
  }
  uint32_t Find(uint64_t key) const {
    return index_.Find(hash_(key),
                       [this, key](uint32_t position) { return keys_[position] == key; });
  }
  void Clear() {
    index_.Clear();
    keys_.clear();
  }
  const std::vector<uint64_t>& keys() const { return keys_; }
  size_t indexed() const { return index_.size(); }

 private:
  uint64_t (*hash_)(uint64_t);
  FlatIndex index_;
  std::vector<uint64_t> keys_;
};

uint64_t Mixed(uint64_t key) { return MixBits(key); }
uint64_t SixteenValues(uint64_t key) { return key % 16; }  // most keys share a full hash

void CheckAgainstMap(uint64_t (*hash)(uint64_t), int operations, uint64_t key_range) {
  KeyedVector index(hash);
  std::unordered_map<uint64_t, uint32_t> expected;
  std::mt19937_64 random(7);
  for (int i = 0; i < operations; ++i) {
    const uint64_t key = random() % key_range;
    if (i % 3 == 0) {
      const auto found = expected.find(key);
      ASSERT_EQ(index.Find(key), found == expected.end() ? FlatIndex::kAbsent : found->second)
          << "key " << key;
      continue;
    }
    bool inserted;
    const uint32_t at = index.PositionOf(key, &inserted);
    const auto [entry, added] = expected.try_emplace(key, static_cast<uint32_t>(expected.size()));
    ASSERT_EQ(inserted, added) << "key " << key;
    ASSERT_EQ(at, entry->second) << "key " << key;
    ASSERT_EQ(index.keys()[at], key);
  }
  EXPECT_EQ(index.indexed(), expected.size());
}

TEST(FlatIndexTest, MatchesAMapThroughGrowth) { CheckAgainstMap(Mixed, 300000, 50000); }

TEST(FlatIndexTest, EqualHashesAreToldApartByTheCallersEquality) {
  CheckAgainstMap(SixteenValues, 6000, 1500);
}

TEST(FlatIndexTest, ClearForgetsEveryEntryAndTheIndexRefills) {
  KeyedVector index(Mixed);
  bool inserted;
  for (uint64_t key = 0; key < 5000; ++key) index.PositionOf(key, &inserted);
  index.Clear();
  EXPECT_EQ(index.indexed(), 0u);
  for (uint64_t key = 0; key < 5000; ++key) ASSERT_EQ(index.Find(key), FlatIndex::kAbsent);
  // New positions start from 0 again, in the order keys arrive.
  for (uint64_t key = 4999; key + 1 > 0; --key) {
    ASSERT_EQ(index.PositionOf(key, &inserted), 4999 - key);
    ASSERT_TRUE(inserted);
  }
  EXPECT_EQ(index.indexed(), 5000u);
}

TEST(FlatIndexTest, HashObjectWordsSeesEveryWord) {
  struct Words {
    uint64_t word[7];
  };
  Words base{};
  const uint64_t base_hash = HashObjectWords(base);
  for (int word = 0; word < 7; ++word) {
    for (int bit = 0; bit < 64; bit += 9) {
      Words changed = base;
      changed.word[word] ^= uint64_t{1} << bit;
      // The index places entries by the low 32 bits: they must differ too.
      EXPECT_NE(static_cast<uint32_t>(HashObjectWords(changed)), static_cast<uint32_t>(base_hash))
          << "word " << word << " bit " << bit;
    }
  }
}

}  // namespace
}  // namespace ctxprof
