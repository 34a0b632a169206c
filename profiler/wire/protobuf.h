// ProtoWriter: the protocol buffer wire format, as far as ctxprof's encoders need it (pprof's
// profile.proto, OTLP profiles, Pyroscope's LabelsSnapshot): varint, fixed64 and
// length-delimited fields, packed repeated varints, and nested messages built in their own
// writer and appended as bytes. Field numbers and types come from the caller, which names the
// published schema it follows; nothing here knows a schema.
//
// Proto3 defaults: the *Field methods skip a zero / empty value (a reader sees the default), the
// Always* variants write it anyway (map entries and repeated elements need it).
//
// Thread safety: none; one writer per message being built.
#ifndef CTXPROF_PROFILER_WIRE_PROTOBUF_H_
#define CTXPROF_PROFILER_WIRE_PROTOBUF_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ctxprof {

class ProtoWriter {
 public:
  // int32/int64/uint32/uint64/bool/enum fields; negative values take ten bytes, as the spec
  // says for int32 and int64.
  void VarintField(int field, int64_t value) {
    if (value != 0) AlwaysVarintField(field, value);
  }
  void AlwaysVarintField(int field, int64_t value);
  void Fixed64Field(int field, uint64_t value);
  // string, bytes and embedded message fields.
  void BytesField(int field, std::string_view value) {
    if (!value.empty()) AlwaysBytesField(field, value);
  }
  void AlwaysBytesField(int field, std::string_view value);
  // A packed repeated varint field (nothing when empty).
  void PackedField(int field, const std::vector<uint64_t>& values);
  // A packed repeated fixed64 field (nothing when empty).
  void PackedFixed64Field(int field, const std::vector<uint64_t>& values);

  const std::string& bytes() const { return bytes_; }

 private:
  void Varint(uint64_t value);
  void Tag(int field, int wire_type);

  std::string bytes_;
};

// A string table whose index 0 is "" (pprof and OTLP both require it): Index() interns.
class ProtoStringTable {
 public:
  ProtoStringTable() { Index(""); }
  int64_t Index(const std::string& text);
  const std::vector<std::string>& strings() const { return strings_; }

 private:
  std::unordered_map<std::string, int64_t> index_;
  std::vector<std::string> strings_;
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_WIRE_PROTOBUF_H_
