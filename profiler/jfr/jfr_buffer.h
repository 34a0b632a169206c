// JfrBuffer: an append-only byte buffer with the JFR wire encodings (docs/JFR.md, and §3 of
// the shared format note): LEB128-style varints, padded varints that can be patched in place,
// and strings.
//
// Thread safety: none; one buffer belongs to one thread (the writer thread).
#ifndef CTXPROF_PROFILER_JFR_JFR_BUFFER_H_
#define CTXPROF_PROFILER_JFR_JFR_BUFFER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

namespace ctxprof {

class JfrBuffer {
 public:
  // String encodings (the first byte of a JFR string value).
  static constexpr uint8_t kStringNull = 0;
  static constexpr uint8_t kStringEmpty = 1;
  static constexpr uint8_t kStringUtf8 = 3;

  // Width of a padded varint: 5 bytes hold up to 2^35 - 1, more than any chunk we write.
  static constexpr size_t kPaddedVarintBytes = 5;

  size_t size() const { return size_; }
  const uint8_t* data() const { return bytes_.get(); }
  uint8_t* mutable_data() { return bytes_.get(); }
  void clear() { size_ = 0; }
  // Makes room for `n` more bytes.
  void Reserve(size_t n) {
    if (capacity_ - size_ < n) Grow(n);
  }

  void PutByte(uint8_t value) {
    Reserve(1);
    bytes_[size_++] = value;
  }
  void PutBytes(const void* data, size_t length);
  // Unsigned LEB128 with the JFR rule that a 9th byte carries 8 full bits (1..9 bytes). Inline
  // for one and two bytes (type ids, keys and counts: most of an event's fields).
  void PutVarint(uint64_t value) {
    if (value < 0x80 && size_ < capacity_) {
      bytes_[size_++] = static_cast<uint8_t>(value);
      return;
    }
    if (value < 0x4000 && capacity_ - size_ >= 2) {  // keys up to 16383: two bytes
      bytes_[size_++] = static_cast<uint8_t>(value | 0x80);
      bytes_[size_++] = static_cast<uint8_t>(value >> 7);
      return;
    }
    PutAnyVarint(value);
  }
  // A varint of exactly kPaddedVarintBytes bytes at the end, to be filled by PatchVarint.
  // Returns its offset.
  size_t ReservePaddedVarint();
  // Writes `value` (< 2^35) as a kPaddedVarintBytes-byte varint at `offset`.
  void PatchVarint(size_t offset, uint64_t value);
  // A string value: "" as the empty encoding, anything else as UTF-8 bytes.
  void PutString(std::string_view value);
  void PutNullString() { PutByte(kStringNull); }
  // A whole record: its size (which counts itself, in the shortest varint that can hold the
  // total) followed by `body` (the record's type id and fields).
  void PutRecord(const JfrBuffer& body);

  // Number of bytes PutVarint(value) appends.
  static size_t VarintLength(uint64_t value);
  // Writes a kPaddedVarintBytes-byte varint into `out`.
  static void EncodePaddedVarint(uint64_t value, uint8_t* out);

 private:
  void PutAnyVarint(uint64_t value);
  void Grow(size_t n);

  // Not std::vector: appends are the writer's hot path and must not zero-fill or check per byte.
  std::unique_ptr<uint8_t[]> bytes_;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_JFR_JFR_BUFFER_H_
