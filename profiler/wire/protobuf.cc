#include "profiler/wire/protobuf.h"

namespace ctxprof {

namespace {
constexpr int kWireVarint = 0;
constexpr int kWireFixed64 = 1;
constexpr int kWireLengthDelimited = 2;
}  // namespace

void ProtoWriter::Varint(uint64_t value) {
  while (value >= 0x80) {
    bytes_ += static_cast<char>((value & 0x7f) | 0x80);
    value >>= 7;
  }
  bytes_ += static_cast<char>(value);
}

void ProtoWriter::Tag(int field, int wire_type) {
  Varint(static_cast<uint64_t>(field) << 3 | static_cast<uint64_t>(wire_type));
}

void ProtoWriter::AlwaysVarintField(int field, int64_t value) {
  Tag(field, kWireVarint);
  Varint(static_cast<uint64_t>(value));
}

void ProtoWriter::Fixed64Field(int field, uint64_t value) {
  Tag(field, kWireFixed64);
  for (int i = 0; i < 8; i++) bytes_ += static_cast<char>(value >> (8 * i));  // little-endian
}

void ProtoWriter::AlwaysBytesField(int field, std::string_view value) {
  Tag(field, kWireLengthDelimited);
  Varint(value.size());
  bytes_.append(value.data(), value.size());
}

void ProtoWriter::PackedField(int field, const std::vector<uint64_t>& values) {
  if (values.empty()) return;
  ProtoWriter packed;
  for (uint64_t value : values) packed.Varint(value);
  AlwaysBytesField(field, packed.bytes());
}

void ProtoWriter::PackedFixed64Field(int field, const std::vector<uint64_t>& values) {
  if (values.empty()) return;
  std::string packed;
  for (uint64_t value : values) {
    for (int i = 0; i < 8; i++) packed += static_cast<char>(value >> (8 * i));
  }
  AlwaysBytesField(field, packed);
}

int64_t ProtoStringTable::Index(const std::string& text) {
  auto inserted = index_.emplace(text, static_cast<int64_t>(strings_.size()));
  if (inserted.second) strings_.push_back(text);
  return inserted.first->second;
}

}  // namespace ctxprof
