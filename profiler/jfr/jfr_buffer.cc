#include "profiler/jfr/jfr_buffer.h"

#include <algorithm>
#include <cstring>

namespace ctxprof {

void JfrBuffer::Grow(size_t n) {
  const size_t capacity = std::max(size_ + n, std::max<size_t>(2 * capacity_, 4096));
  std::unique_ptr<uint8_t[]> bytes(new uint8_t[capacity]);
  if (size_ != 0) memcpy(bytes.get(), bytes_.get(), size_);
  bytes_ = std::move(bytes);
  capacity_ = capacity;
}

void JfrBuffer::PutBytes(const void* data, size_t length) {
  Reserve(length);
  if (length != 0) memcpy(bytes_.get() + size_, data, length);
  size_ += length;
}

void JfrBuffer::PutAnyVarint(uint64_t value) {
  Reserve(9);
  uint8_t* out = bytes_.get() + size_;
  for (int i = 0; i < 8; i++) {
    if (value < 0x80) {
      *out++ = static_cast<uint8_t>(value);
      size_ = out - bytes_.get();
      return;
    }
    *out++ = static_cast<uint8_t>(value | 0x80);
    value >>= 7;
  }
  *out++ = static_cast<uint8_t>(value);  // 9th byte: the top 8 bits, no continuation
  size_ = out - bytes_.get();
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
  Reserve(kPaddedVarintBytes);
  const size_t offset = size_;
  size_ += kPaddedVarintBytes;
  return offset;
}

void JfrBuffer::PatchVarint(size_t offset, uint64_t value) {
  EncodePaddedVarint(value, &bytes_[offset]);
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

void JfrBuffer::PutRecord(const JfrBuffer& body) {
  size_t size_length = 1;
  while (VarintLength(body.size() + size_length) != size_length) size_length++;
  PutVarint(body.size() + size_length);
  PutBytes(body.data(), body.size());
}

}  // namespace ctxprof
