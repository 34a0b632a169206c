#include "tools/pprof.h"

#include <zlib.h>

#include <map>
#include <unordered_map>

namespace ctxprof::tools {

namespace {

// Protocol buffer wire format: just what profile.proto needs (varints and length-delimited).
class ProtoWriter {
 public:
  void Varint(uint64_t value) {
    while (value >= 0x80) {
      bytes_ += static_cast<char>((value & 0x7f) | 0x80);
      value >>= 7;
    }
    bytes_ += static_cast<char>(value);
  }
  void Tag(int field, int wire_type) { Varint(static_cast<uint64_t>(field) << 3 | wire_type); }
  // int64/uint64 fields: negative int64 values take ten bytes, as the spec says.
  void VarintField(int field, int64_t value) {
    if (value == 0) return;  // proto3 default: not written
    Tag(field, 0);
    Varint(static_cast<uint64_t>(value));
  }
  void BytesField(int field, const std::string& value) {
    Tag(field, 2);
    Varint(value.size());
    bytes_ += value;
  }
  void PackedField(int field, const std::vector<uint64_t>& values) {
    if (values.empty()) return;
    ProtoWriter packed;
    for (uint64_t value : values) packed.Varint(value);
    BytesField(field, packed.bytes());
  }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

class StringTable {
 public:
  StringTable() { Index(""); }  // pprof requires string_table[0] == ""
  int64_t Index(const std::string& text) {
    auto inserted = index_.emplace(text, static_cast<int64_t>(strings_.size()));
    if (inserted.second) strings_.push_back(text);
    return inserted.first->second;
  }
  const std::vector<std::string>& strings() const { return strings_; }

 private:
  std::unordered_map<std::string, int64_t> index_;
  std::vector<std::string> strings_;
};

std::string ValueType(StringTable* strings, const std::string& type, const std::string& unit) {
  ProtoWriter message;
  message.VarintField(1, strings->Index(type));
  message.VarintField(2, strings->Index(unit));
  return message.bytes();
}

std::string StringLabel(StringTable* strings, const std::string& key, const std::string& value) {
  ProtoWriter label;
  label.VarintField(1, strings->Index(key));
  label.VarintField(2, strings->Index(value));
  return label.bytes();
}

}  // namespace

std::string EncodePprof(const Profile& profile) {
  StringTable strings;
  ProtoWriter out;
  // With wall samples alone the settings' interval is the wall interval: no CPU time then.
  bool has_cpu_samples = false;
  for (const Sample& sample : profile.samples()) has_cpu_samples |= sample.kind == SampleKind::kCpu;
  const bool with_cpu_time = has_cpu_samples && profile.cpu_interval_nanos() > 0;
  // Events: a count and the weight in its unit.
  const bool events = profile.unit() != WeightUnit::kSamples;
  if (profile.unit() == WeightUnit::kBytes) {
    out.BytesField(1, ValueType(&strings, "alloc_samples", "count"));
    out.BytesField(1, ValueType(&strings, "alloc_space", "bytes"));
  } else if (profile.unit() == WeightUnit::kNanoseconds) {
    out.BytesField(1, ValueType(&strings, "contentions", "count"));
    out.BytesField(1, ValueType(&strings, "delay", "nanoseconds"));
  } else {
    out.BytesField(1, ValueType(&strings, "samples", "count"));
    if (with_cpu_time) out.BytesField(1, ValueType(&strings, "cpu", "nanoseconds"));
  }

  // Functions and locations: location id = frame index + 1 (ids must be non-zero).
  std::map<std::pair<std::string, std::string>, uint64_t> function_ids;
  std::vector<uint64_t> function_of_frame;
  for (const Frame& frame : profile.frames()) {
    auto inserted = function_ids.emplace(std::make_pair(frame.Name(), frame.descriptor),
                                         function_ids.size() + 1);
    function_of_frame.push_back(inserted.first->second);
    if (!inserted.second) continue;
    ProtoWriter function;
    function.VarintField(1, static_cast<int64_t>(inserted.first->second));
    function.VarintField(2, strings.Index(frame.Name()));
    function.VarintField(3, strings.Index(frame.Name() + frame.descriptor));
    function.VarintField(4, strings.Index(frame.class_name));
    out.BytesField(5, function.bytes());
  }
  for (size_t f = 0; f < profile.frames().size(); f++) {
    ProtoWriter line;
    line.VarintField(1, static_cast<int64_t>(function_of_frame[f]));
    line.VarintField(2, profile.frames()[f].line);
    ProtoWriter location;
    location.VarintField(1, static_cast<int64_t>(f + 1));
    location.BytesField(4, line.bytes());
    out.BytesField(4, location.bytes());
  }

  // Context labels are encoded once per interned context.
  std::vector<std::string> context_labels(profile.contexts().size());
  for (size_t c = 0; c < profile.contexts().size(); c++) {
    const Context& context = profile.contexts()[c];
    ProtoWriter labels;
    if (!context.trace_id.empty()) {
      labels.BytesField(3, StringLabel(&strings, "trace_id", context.trace_id));
    }
    if (!context.span_id.empty()) {
      labels.BytesField(3, StringLabel(&strings, "span_id", context.span_id));
    }
    for (size_t a = 0; a < context.values.size(); a++) {
      if (context.values[a].empty()) continue;
      labels.BytesField(3, StringLabel(&strings, profile.attribute_names()[a], context.values[a]));
    }
    context_labels[c] = labels.bytes();
  }
  const std::map<SampleKind, std::string> kind_labels = {
      {SampleKind::kCpu, StringLabel(&strings, "kind", "cpu")},
      {SampleKind::kWall, StringLabel(&strings, "kind", "wall")},
      {SampleKind::kAllocation, StringLabel(&strings, "kind", "alloc")},
      {SampleKind::kMonitor, StringLabel(&strings, "kind", "monitor")},
      {SampleKind::kPark, StringLabel(&strings, "kind", "park")}};
  const int64_t thread_key = strings.Index("thread_id");

  for (const Sample& sample : profile.samples()) {
    ProtoWriter message;
    std::vector<uint64_t> locations;
    for (uint32_t frame : profile.stacks()[sample.stack]) locations.push_back(frame + 1);
    message.PackedField(1, locations);  // leaf first, as pprof wants
    std::vector<uint64_t> values = {static_cast<uint64_t>(sample.weight)};
    if (events) {
      values = {1, static_cast<uint64_t>(sample.weight)};
    } else if (with_cpu_time) {
      values.push_back(sample.kind == SampleKind::kCpu
                           ? static_cast<uint64_t>(sample.weight * profile.cpu_interval_nanos())
                           : 0);
    }
    message.PackedField(2, values);
    message.BytesField(3, kind_labels.at(sample.kind));
    ProtoWriter thread;
    thread.VarintField(1, thread_key);
    thread.VarintField(3, sample.thread_id);
    message.BytesField(3, thread.bytes());
    std::string encoded = message.bytes();
    if (sample.context >= 0) encoded += context_labels[sample.context];  // more field-3 labels
    out.BytesField(2, encoded);
  }
  if (with_cpu_time) {
    out.BytesField(11, ValueType(&strings, "cpu", "nanoseconds"));
    out.VarintField(12, profile.cpu_interval_nanos());
  }
  // Last: every string above has been interned by now.
  for (const std::string& text : strings.strings()) out.BytesField(6, text);
  return out.bytes();
}

bool Gzip(const std::string& data, std::string* out, std::string* error) {
  z_stream stream{};
  // 15 window bits + 16: a gzip header and trailer instead of zlib's.
  if (deflateInit2(&stream, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
      Z_OK) {
    *error = "zlib: deflateInit2 failed";
    return false;
  }
  out->resize(deflateBound(&stream, data.size()));
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  stream.next_out = reinterpret_cast<Bytef*>(&(*out)[0]);
  stream.avail_out = static_cast<uInt>(out->size());
  const int result = deflate(&stream, Z_FINISH);
  out->resize(stream.total_out);
  deflateEnd(&stream);
  if (result != Z_STREAM_END) {
    *error = "zlib: deflate failed (" + std::to_string(result) + ")";
    return false;
  }
  return true;
}

}  // namespace ctxprof::tools
