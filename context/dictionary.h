// Dictionary: interns attribute value strings to u32 ids, with bounded memory.
//
// Ids: 0 = unset (never returned by Intern), kOverflowId = 1 = "the dictionary was full", real
// values get 2, 3, ... in interning order. An id, once returned, maps to the same bytes for the
// dictionary's lifetime (entries are never removed or moved), so ids can be cached (the Java
// side does) and stored in context blocks.
//
// Bounds, all fixed at construction and allocated up front:
//  * at most `max_values` distinct values (default 65,536);
//  * at most `max_total_bytes` of string bytes in all (default 4 MiB);
//  * each value at most `max_value_bytes` (default 256, limit kMaxValueBytesLimit); a longer
//    value is cut at the last UTF-8 character boundary at or below the limit (never inside a
//    multi-byte sequence), then interned; truncated_values() counts these.
// When either of the first two bounds is reached, Intern returns kOverflowId and counts it in
// overflowed_interns(); the dictionary never grows.
//
// Concurrency:
//  * Lookup hits are lock-free: readers probe a fixed open-addressing table of
//    std::atomic<uint32_t> ids (load-acquire) and compare against immutable entries.
//  * Misses take one mutex for the insert: re-probe, copy at most max_value_bytes into the arena,
//    fill the entry, then publish the id in the table with store-release (pairs with the readers'
//    load-acquire, so a reader that sees the id sees the entry's bytes). The critical section is
//    bounded by one probe sequence and one copy: no allocation, no I/O, no waiting on anything
//    else, so a caller is never blocked for long.
//  * ValueOf(id) is lock-free and async-signal-safe (the entry is published before its id is).
//  * The writer thread reads ids it found in context blocks; any id < next id is complete.
#ifndef CTXPROF_CONTEXT_DICTIONARY_H_
#define CTXPROF_CONTEXT_DICTIONARY_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace ctxprof {

class Dictionary {
 public:
  static constexpr uint32_t kUnsetId = 0;
  static constexpr uint32_t kOverflowId = 1;
  static constexpr uint32_t kFirstValueId = 2;
  // ValueOf(kOverflowId): what a recording shows for values that did not fit.
  static constexpr std::string_view kOverflowValue = "<ctxprof: dictionary full>";
  static constexpr size_t kMaxValueBytesLimit = 4096;

  struct Options {
    uint32_t max_values = 65536;
    size_t max_total_bytes = 4u << 20;
    size_t max_value_bytes = 256;
  };

  // Validates `options` (non-zero bounds, max_value_bytes <= kMaxValueBytesLimit and
  // <= max_total_bytes, max_values <= 2^30). Returns nullptr and sets *error on a bad option.
  static std::unique_ptr<Dictionary> Create(const Options& options, std::string* error);

  Dictionary(const Dictionary&) = delete;
  Dictionary& operator=(const Dictionary&) = delete;

  // The id of `value` (truncated as described above), interning it on first sight; kOverflowId
  // when full. Thread-safe.
  uint32_t Intern(std::string_view value);

  // The id of `value` if already interned (after truncation), else kUnsetId. Lock-free.
  uint32_t Find(std::string_view value) const;

  // The bytes of `id`; empty for kUnsetId and for ids never returned by Intern. Lock-free.
  std::string_view ValueOf(uint32_t id) const;

  // Number of distinct values interned (excluding the reserved ids).
  uint32_t size() const;
  const Options& options() const { return options_; }
  uint64_t overflowed_interns() const { return overflowed_.load(std::memory_order_relaxed); }
  uint64_t truncated_values() const { return truncated_.load(std::memory_order_relaxed); }

  // The longest prefix of `value` that is at most `limit` bytes and does not end inside a UTF-8
  // multi-byte sequence. Invalid UTF-8 is cut by the same rule (continuation bytes are skipped).
  static std::string_view TruncateUtf8(std::string_view value, size_t limit);

 private:
  struct Entry {
    std::atomic<const char*> bytes{nullptr};
    uint32_t length = 0;
    uint32_t hash = 0;
  };

  explicit Dictionary(const Options& options);
  static uint32_t Hash(std::string_view value);
  // Probes for `value`; returns its id, or kUnsetId with *empty_slot = the first free slot.
  uint32_t Probe(std::string_view value, uint32_t hash, size_t* empty_slot) const;

  const Options options_;
  const size_t table_mask_;
  std::unique_ptr<std::atomic<uint32_t>[]> table_;  // slot -> id, 0 = empty
  std::unique_ptr<Entry[]> entries_;                // id -> entry
  std::unique_ptr<char[]> arena_;
  size_t arena_used_ = 0;  // guarded by insert_mutex_
  std::atomic<uint32_t> next_id_{kFirstValueId};
  std::mutex insert_mutex_;
  std::atomic<uint64_t> overflowed_{0};
  std::atomic<uint64_t> truncated_{0};
};

}  // namespace ctxprof

#endif  // CTXPROF_CONTEXT_DICTIONARY_H_
