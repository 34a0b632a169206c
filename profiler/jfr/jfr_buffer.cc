#include "profiler/jfr/jfr_buffer.h"

#include <cstring>

namespace ctxprof {

void JfrBuffer::PutBytes(const void* data, size_t length) {
  const uint8_t* begin = static_cast<const uint8_t*>(data);
  bytes_.insert(bytes_.end(), begin, begin + length);
}

void JfrBuffer::PutVarint(uint64_t value) {
  for (int i = 0; i < 8; i++) {
    if (value < 0x80) {
      bytes_.push_back(static_cast<uint8_t>(value));
      return;
    }
    bytes_.push_back(static_cast<uint8_t>(value | 0x80));
    value >>= 7;
  }
  bytes_.push_back(static_cast<uint8_t>(value));  // 9th byte: the top 8 bits, no continuation
}

size_t JfrBuffer::VarintLength(uint64_t value) {
  size_t length = 1;
  while (value >= 0x80 && length < 9) {
    value >>= 7;
    length++;
  }
  return length;
}

void JfrBuffer::EncodePaddedVarint(uint64_t value, uint8_t* out) {
  for (size_t i = 0; i + 1 < kPaddedVarintBytes; i++) {
    out[i] = static_cast<uint8_t>((value & 0x7F) | 0x80);
    value >>= 7;
  }
  out[kPaddedVarintBytes - 1] = static_cast<uint8_t>(value & 0x7F);
}

size_t JfrBuffer::ReservePaddedVarint() {
  const size_t offset = bytes_.size();
  bytes_.resize(offset + kPaddedVarintBytes);
  return offset;
}

void JfrBuffer::PatchVarint(size_t offset, uint64_t value) {
  EncodePaddedVarint(value, &bytes_[offset]);
}

void JfrBuffer::PutU16BigEndian(uint16_t value) {
  bytes_.push_back(static_cast<uint8_t>(value >> 8));
  bytes_.push_back(static_cast<uint8_t>(value));
}

void JfrBuffer::PutU64BigEndian(uint64_t value) {
  for (int shift = 56; shift >= 0; shift -= 8)
    bytes_.push_back(static_cast<uint8_t>(value >> shift));
}

void JfrBuffer::PutString(std::string_view value) {
  if (value.empty()) {
    PutByte(kStringEmpty);
    return;
  }
  PutByte(kStringUtf8);
  PutVarint(value.size());
  PutBytes(value.data(), value.size());
}

}  // namespace ctxprof
