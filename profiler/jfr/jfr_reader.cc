#include "profiler/jfr/jfr_reader.h"

#include <errno.h>
#include <string.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>

#include "profiler/jfr/utf8.h"

namespace ctxprof {

namespace {

constexpr uint64_t kHeaderSize = 68;
constexpr int kMaxNesting = 64;

// Java's (long) cast: NaN is 0 and values beyond the range saturate (in C++ such a cast is
// undefined, and a file's ticks and ticks-per-second can make any quotient).
int64_t JavaLongOf(double value) {
  if (std::isnan(value)) return 0;
  if (value >= 0x1p63) return INT64_MAX;
  if (value < -0x1p63) return INT64_MIN;
  return static_cast<int64_t>(value);
}

}  // namespace

// Parses one chunk: header, metadata, checkpoint chain, then the event records.
class JfrReader::ChunkParser {
 public:
  ChunkParser(JfrReader* reader, const std::string& name, const Options& options)
      : reader_(reader), name_(name), options_(options) {}

  // Parses the chunk at `start`; *next = where the next chunk starts (0 = stop). False when the
  // chunk cannot be read; error() names the file and the offset.
  bool Parse(uint64_t start, uint64_t* next);
  const std::string& error() const { return error_; }

 private:
  struct Element {
    uint32_t name = 0;
    std::vector<std::pair<uint32_t, uint32_t>> attributes;
    std::vector<Element> children;
  };
  struct PoolEntry {
    JfrValue raw;
    JfrValue resolved;
    uint8_t state = 0;  // 0 raw, 1 resolving (a cycle resolves to null), 2 resolved
  };

  bool Fail(uint64_t offset, const std::string& what) {
    error_ = name_ + ": offset " + std::to_string(offset) + ": " + what;
    return false;
  }
  uint64_t remaining() const { return end_ - pos_; }
  bool ReadByte(uint8_t* out);
  bool ReadVarint(uint64_t* out);
  bool ReadFixed(int bytes, uint64_t* out);
  bool ReadString(JfrValue* out, bool allow_pool);
  bool ReadHeader(uint64_t start);
  bool ReadMetadata(uint64_t offset);
  bool ReadElement(const std::vector<std::string>& strings, int depth, Element* out);
  bool BuildClasses(const std::vector<std::string>& strings, const Element& root);
  bool ReadCheckpoints(uint64_t newest);
  bool ReadCheckpoint(uint64_t offset, int64_t* delta);
  bool ReadField(const JfrField& field, int depth, JfrValue* out);
  bool ReadInline(uint32_t type_id, int depth, JfrValue* out);
  bool ReadEvents();
  JfrValue Resolve(const JfrValue& value, int depth);

  JfrReader* const reader_;
  const std::string& name_;
  const Options& options_;
  std::string error_;

  const uint8_t* data_ = nullptr;
  uint64_t pos_ = 0;
  uint64_t end_ = 0;
  uint64_t chunk_start_ = 0;
  uint64_t chunk_end_ = 0;
  uint64_t checkpoint_offset_ = 0;
  uint64_t metadata_offset_ = 0;
  JfrChunkInfo info_;
  std::vector<JfrClass>* classes_ = nullptr;
  std::unordered_map<uint32_t, const JfrClass*> class_by_id_;
  uint32_t string_type_id_ = 0;
  std::map<std::pair<uint32_t, uint64_t>, PoolEntry> pools_;
};

bool JfrReader::ChunkParser::ReadByte(uint8_t* out) {
  if (pos_ >= end_) return Fail(pos_, "unexpected end of data (reading a byte)");
  *out = data_[pos_++];
  return true;
}

bool JfrReader::ChunkParser::ReadVarint(uint64_t* out) {
  const uint64_t start = pos_;
  uint64_t value = 0;
  for (int i = 0; i < 9; i++) {
    if (pos_ >= end_) return Fail(start, "unexpected end of data inside a varint");
    const uint8_t byte = data_[pos_++];
    if (i == 8) {
      value |= static_cast<uint64_t>(byte) << 56;
      break;
    }
    value |= static_cast<uint64_t>(byte & 0x7F) << (7 * i);
    if ((byte & 0x80) == 0) break;
  }
  *out = value;
  return true;
}

bool JfrReader::ChunkParser::ReadFixed(int bytes, uint64_t* out) {
  if (remaining() < static_cast<uint64_t>(bytes)) {
    return Fail(pos_, "unexpected end of data (reading " + std::to_string(bytes) + " bytes)");
  }
  uint64_t value = 0;
  for (int i = 0; i < bytes; i++) value = (value << 8) | data_[pos_++];
  *out = value;
  return true;
}

bool JfrReader::ChunkParser::ReadString(JfrValue* out, bool allow_pool) {
  const uint64_t start = pos_;
  uint8_t encoding;
  if (!ReadByte(&encoding)) return false;
  uint64_t length;
  switch (encoding) {
    case 0:
      *out = JfrValue();
      return true;
    case 1:
      *out = JfrValue::String("");
      return true;
    case 2: {
      if (!allow_pool) return Fail(start, "string pool reference where none is allowed");
      uint64_t key;
      if (!ReadVarint(&key)) return false;
      *out = JfrValue();
      out->reference_ = true;
      out->type_ = class_by_id_.count(string_type_id_) ? class_by_id_[string_type_id_] : nullptr;
      out->integer_ = static_cast<int64_t>(key);
      return true;
    }
    case 3:
    case 5: {
      if (!ReadVarint(&length)) return false;
      if (length > remaining()) {
        return Fail(start, "string of " + std::to_string(length) + " bytes exceeds the data");
      }
      std::string value;
      if (encoding == 3) {
        value.assign(reinterpret_cast<const char*>(data_ + pos_), length);
      } else {
        for (uint64_t i = 0; i < length; i++) AppendUtf8(data_[pos_ + i], &value);
      }
      pos_ += length;
      *out = JfrValue::String(std::move(value));
      return true;
    }
    case 4: {
      if (!ReadVarint(&length)) return false;
      if (length > remaining()) {
        return Fail(start, "string of " + std::to_string(length) + " chars exceeds the data");
      }
      std::string value;
      uint32_t high_surrogate = 0;
      for (uint64_t i = 0; i < length; i++) {
        uint64_t unit;
        if (!ReadVarint(&unit)) return false;
        unit &= 0xFFFF;
        if (unit >= 0xD800 && unit < 0xDC00) {
          high_surrogate = static_cast<uint32_t>(unit);
          continue;
        }
        if (unit >= 0xDC00 && unit < 0xE000 && high_surrogate != 0) {
          AppendUtf8(0x10000 + ((high_surrogate - 0xD800) << 10) + (unit - 0xDC00), &value);
        } else {
          AppendUtf8(static_cast<uint32_t>(unit), &value);
        }
        high_surrogate = 0;
      }
      *out = JfrValue::String(std::move(value));
      return true;
    }
    default:
      return Fail(start, "unknown string encoding " + std::to_string(encoding));
  }
}

bool JfrReader::ChunkParser::ReadHeader(uint64_t start) {
  pos_ = start;
  end_ = reader_->bytes_.size();
  if (remaining() < kHeaderSize) return Fail(start, "truncated chunk header (need 68 bytes)");
  if (memcmp(data_ + start, "FLR\0", 4) != 0) {
    return Fail(start, "not a JFR chunk (magic is not FLR\\0)");
  }
  pos_ += 4;
  uint64_t major, minor, size, duration, start_ticks, ticks_per_second, generation, flags,
      start_nanos;
  if (!ReadFixed(2, &major) || !ReadFixed(2, &minor) || !ReadFixed(8, &size) ||
      !ReadFixed(8, &checkpoint_offset_) || !ReadFixed(8, &metadata_offset_) ||
      !ReadFixed(8, &start_nanos) || !ReadFixed(8, &duration) || !ReadFixed(8, &start_ticks) ||
      !ReadFixed(8, &ticks_per_second) || !ReadFixed(1, &generation)) {
    return false;
  }
  pos_ += 1;  // padding
  if (!ReadFixed(2, &flags)) return false;
  if (major != 1 && major != 2) {
    return Fail(start + 4, "unsupported version " + std::to_string(major) + "." +
                               std::to_string(minor) + " (this reader reads 1.x and 2.x)");
  }
  if (generation == kChunkGenerationLocked) {
    reader_->met_locked_header_ = true;
    if (!(options_.allow_unfinished_chunks && options_.read_locked_chunks)) {
      return Fail(start + 64,
                  "chunk header is being rewritten (generation 255): the writer "
                  "stopped in the middle of a header update");
    }
  }
  if (generation != 0 && !options_.allow_unfinished_chunks) {
    return Fail(start + 64, "chunk is unfinished (generation " + std::to_string(generation) +
                                "): the writer did not finish it; read it with "
                                "allow_unfinished_chunks to get the data it published");
  }
  if (size < kHeaderSize || size > reader_->bytes_.size() - start) {
    return Fail(start + 8, "chunk size " + std::to_string(size) + " does not fit the " +
                               std::to_string(reader_->bytes_.size() - start) +
                               " bytes from the chunk start to the end of the file");
  }
  if (metadata_offset_ == 0) {
    return Fail(start + 24, generation == 0 ? "finished chunk has no metadata"
                                            : "unfinished chunk published no data yet");
  }
  if (metadata_offset_ < kHeaderSize || metadata_offset_ >= size ||
      (checkpoint_offset_ != 0 &&
       (checkpoint_offset_ < kHeaderSize || checkpoint_offset_ >= size))) {
    return Fail(start + 16, "constant pool or metadata offset outside the chunk");
  }
  if (ticks_per_second == 0) return Fail(start + 56, "ticks per second is 0");
  chunk_start_ = start;
  chunk_end_ = start + size;
  info_.file_offset = start;
  info_.size = size;
  info_.start_nanos = static_cast<int64_t>(start_nanos);
  info_.duration_nanos = duration;
  info_.start_ticks = start_ticks;
  info_.ticks_per_second = ticks_per_second;
  info_.generation = static_cast<uint8_t>(generation);
  info_.flags = static_cast<uint16_t>(flags);
  return true;
}

bool JfrReader::ChunkParser::ReadElement(const std::vector<std::string>& strings, int depth,
                                         Element* out) {
  if (depth > kMaxNesting) return Fail(pos_, "metadata elements nested too deeply");
  const uint64_t start = pos_;
  uint64_t name, count;
  if (!ReadVarint(&name) || !ReadVarint(&count)) return false;
  if (name >= strings.size()) return Fail(start, "metadata element name index out of range");
  out->name = static_cast<uint32_t>(name);
  if (count > remaining() / 2) return Fail(start, "metadata attribute count exceeds the data");
  for (uint64_t i = 0; i < count; i++) {
    uint64_t key, value;
    if (!ReadVarint(&key) || !ReadVarint(&value)) return false;
    if (key >= strings.size() || value >= strings.size()) {
      return Fail(start, "metadata attribute string index out of range");
    }
    out->attributes.emplace_back(static_cast<uint32_t>(key), static_cast<uint32_t>(value));
  }
  if (!ReadVarint(&count)) return false;
  if (count > remaining() / 3) return Fail(start, "metadata child count exceeds the data");
  // Children are added as they are read, not allocated up front from the count: every nesting
  // level may claim a third of the data, so up-front allocation grew with depth x input size.
  for (uint64_t i = 0; i < count; i++) {
    if (!ReadElement(strings, depth + 1, &out->children.emplace_back())) return false;
  }
  return true;
}

bool JfrReader::ChunkParser::BuildClasses(const std::vector<std::string>& strings,
                                          const Element& root) {
  auto attribute = [&strings](const Element& e, const char* key) -> const std::string* {
    for (const auto& [k, v] : e.attributes) {
      if (strings[k] == key) return &strings[v];  // the first occurrence wins, like the JDK
    }
    return nullptr;
  };
  auto parse_id = [](const std::string* text, uint32_t* id) {
    if (text == nullptr || text->empty() || text->size() > 9) return false;
    uint32_t value = 0;
    for (char c : *text) {
      if (c < '0' || c > '9') return false;
      value = value * 10 + static_cast<uint32_t>(c - '0');
    }
    *id = value;
    return true;
  };
  struct FieldAnnotation {
    size_t class_index;
    size_t field_index;
    uint32_t annotation_id;
    std::string value;  // the annotation's value attribute, "" when it has none
  };
  std::vector<FieldAnnotation> field_annotations;  // resolved once all classes are known
  for (const Element& section : root.children) {
    if (strings[section.name] != "metadata") continue;
    for (const Element& element : section.children) {
      if (strings[element.name] != "class") continue;
      JfrClass klass;
      const std::string* name = attribute(element, "name");
      if (name == nullptr || !parse_id(attribute(element, "id"), &klass.id)) {
        return Fail(metadata_offset_ + chunk_start_, "metadata class without name or id");
      }
      klass.name = *name;
      if (const std::string* super = attribute(element, "superType")) klass.super_type = *super;
      klass.simple = attribute(element, "simpleType") != nullptr;
      for (const Element& child : element.children) {
        if (strings[child.name] != "field") continue;
        JfrField field;
        const std::string* field_name = attribute(child, "name");
        if (field_name == nullptr || !parse_id(attribute(child, "class"), &field.type_id)) {
          return Fail(metadata_offset_ + chunk_start_,
                      "metadata field without name or class in " + klass.name);
        }
        field.name = *field_name;
        field.pooled = attribute(child, "constantPool") != nullptr;
        const std::string* dimension = attribute(child, "dimension");
        field.array = dimension != nullptr && *dimension == "1";
        for (const Element& annotation : child.children) {
          uint32_t annotation_id;
          if (strings[annotation.name] == "annotation" &&
              parse_id(attribute(annotation, "class"), &annotation_id)) {
            const std::string* value = attribute(annotation, "value");
            field_annotations.push_back(FieldAnnotation{classes_->size(), klass.fields.size(),
                                                        annotation_id,
                                                        value == nullptr ? "" : *value});
          }
        }
        klass.fields.push_back(std::move(field));
      }
      classes_->push_back(std::move(klass));
    }
  }
  for (const JfrClass& klass : *classes_) {
    if (klass.id <= 1) {
      return Fail(metadata_offset_ + chunk_start_,
                  "class " + klass.name + " uses reserved id " + std::to_string(klass.id));
    }
    if (!class_by_id_.emplace(klass.id, &klass).second) {
      return Fail(metadata_offset_ + chunk_start_,
                  "class id " + std::to_string(klass.id) + " declared twice");
    }
    if (klass.name == "java.lang.String") string_type_id_ = klass.id;
  }
  for (const FieldAnnotation& a : field_annotations) {
    auto it = class_by_id_.find(a.annotation_id);
    if (it == class_by_id_.end()) continue;
    JfrField& field = (*classes_)[a.class_index].fields[a.field_index];
    if (it->second->name == "jdk.jfr.Contextual") field.contextual = true;
    if (it->second->name == "jdk.jfr.Timespan") field.timespan = a.value;
    if (it->second->name == "jdk.jfr.DataAmount") field.data_amount = a.value;
  }
  for (const JfrClass& klass : *classes_) {
    for (const JfrField& field : klass.fields) {
      if (class_by_id_.count(field.type_id) == 0) {
        return Fail(metadata_offset_ + chunk_start_, "field " + klass.name + "." + field.name +
                                                         " has undeclared type " +
                                                         std::to_string(field.type_id));
      }
    }
  }
  return true;
}

bool JfrReader::ChunkParser::ReadMetadata(uint64_t offset) {
  pos_ = chunk_start_ + offset;
  end_ = chunk_end_;
  uint64_t size, type, ignored, id, count;
  if (!ReadVarint(&size) || !ReadVarint(&type)) return false;
  if (type != 0) {
    return Fail(chunk_start_ + offset,
                "expected the metadata record (type 0), found type " + std::to_string(type));
  }
  if (size > chunk_end_ - (chunk_start_ + offset)) {
    return Fail(chunk_start_ + offset, "metadata record size exceeds the chunk");
  }
  end_ = chunk_start_ + offset + size;
  if (!ReadVarint(&ignored) || !ReadVarint(&ignored) || !ReadVarint(&id) || !ReadVarint(&count)) {
    return false;
  }
  info_.metadata_id = id;
  if (count > remaining()) return Fail(pos_, "metadata string count exceeds the data");
  std::vector<std::string> strings;
  for (uint64_t i = 0; i < count; i++) {
    JfrValue value;
    if (!ReadString(&value, /*allow_pool=*/false)) return false;
    strings.push_back(value.string());
  }
  Element root;
  if (!ReadElement(strings, 0, &root)) return false;
  reader_->metadata_.push_back(std::make_unique<std::vector<JfrClass>>());
  classes_ = reader_->metadata_.back().get();
  return BuildClasses(strings, root);
}

bool JfrReader::ChunkParser::ReadInline(uint32_t type_id, int depth, JfrValue* out) {
  if (depth > kMaxNesting) return Fail(pos_, "values nested too deeply");
  auto it = class_by_id_.find(type_id);
  if (it == class_by_id_.end()) return Fail(pos_, "undeclared type " + std::to_string(type_id));
  const JfrClass& type = *it->second;
  if (type.fields.empty()) {
    const std::string& name = type.name;
    uint64_t value;
    if (name == "java.lang.String") return ReadString(out, /*allow_pool=*/true);
    if (name == "boolean" || name == "byte") {
      uint8_t byte;
      if (!ReadByte(&byte)) return false;
      *out = JfrValue::Integer(name == "byte" ? static_cast<int8_t>(byte) : byte);
      return true;
    }
    if (name == "float" || name == "double") {
      const int bytes = name == "float" ? 4 : 8;
      if (!ReadFixed(bytes, &value)) return false;
      if (bytes == 4) {
        const uint32_t bits = static_cast<uint32_t>(value);
        float f;
        memcpy(&f, &bits, 4);
        *out = JfrValue::Float(f);
      } else {
        double d;
        memcpy(&d, &value, 8);
        *out = JfrValue::Float(d);
      }
      return true;
    }
    if (name == "char" || name == "short" || name == "int" || name == "long") {
      if (!ReadVarint(&value)) return false;
      if (name == "short") {
        *out = JfrValue::Integer(static_cast<int16_t>(value));
      } else if (name == "int") {
        *out = JfrValue::Integer(static_cast<int32_t>(value));
      } else if (name == "char") {
        *out = JfrValue::Integer(static_cast<uint16_t>(value));
      } else {
        *out = JfrValue::Integer(static_cast<int64_t>(value));
      }
      return true;
    }
    return Fail(pos_, "unknown primitive type " + name);
  }
  if (type.simple && type.fields.size() == 1) return ReadField(type.fields[0], depth + 1, out);
  // Values are added as they are read, not allocated up front from the field count: a class
  // may declare thousands of fields and nest itself, and every level would allocate them all
  // before reading a byte.
  std::vector<JfrValue> fields;
  for (const JfrField& field : type.fields) {
    if (!ReadField(field, depth + 1, &fields.emplace_back())) return false;
  }
  *out = JfrValue::Object(&type, std::move(fields));
  return true;
}

bool JfrReader::ChunkParser::ReadField(const JfrField& field, int depth, JfrValue* out) {
  if (field.array) {
    const uint64_t start = pos_;
    uint64_t count;
    if (!ReadVarint(&count)) return false;
    if (count > remaining()) {
      return Fail(start, "array of " + std::to_string(count) + " elements exceeds the data");
    }
    JfrField element = field;
    element.array = false;
    std::vector<JfrValue> elements;
    for (uint64_t i = 0; i < count; i++) {
      const uint64_t element_start = pos_;
      elements.emplace_back();
      if (!ReadField(element, depth + 1, &elements.back())) return false;
      if (pos_ == element_start) return Fail(start, "array elements of zero bytes");
    }
    *out = JfrValue::Array(std::move(elements));
    return true;
  }
  if (field.pooled) {
    uint64_t key;
    if (!ReadVarint(&key)) return false;
    *out = JfrValue();
    out->reference_ = true;
    out->type_ = class_by_id_[field.type_id];
    out->integer_ = static_cast<int64_t>(key);
    return true;
  }
  return ReadInline(field.type_id, depth, out);
}

bool JfrReader::ChunkParser::ReadCheckpoint(uint64_t offset, int64_t* delta) {
  const uint64_t start = chunk_start_ + offset;
  pos_ = start;
  end_ = chunk_end_;
  uint64_t size, type, ignored, delta_bits, pool_count;
  uint8_t type_mask;
  if (!ReadVarint(&size) || !ReadVarint(&type)) return false;
  if (type != 1) {
    return Fail(start, "expected a checkpoint (type 1), found type " + std::to_string(type));
  }
  if (size > chunk_end_ - start) return Fail(start, "checkpoint size exceeds the chunk");
  end_ = start + size;
  if (!ReadVarint(&ignored) || !ReadVarint(&ignored) || !ReadVarint(&delta_bits) ||
      !ReadByte(&type_mask) || !ReadVarint(&pool_count)) {
    return false;
  }
  *delta = static_cast<int64_t>(delta_bits);
  if (pool_count > remaining()) return Fail(start, "checkpoint pool count exceeds the data");
  for (uint64_t p = 0; p < pool_count; p++) {
    const uint64_t pool_start = pos_;
    uint64_t type_id, count;
    if (!ReadVarint(&type_id) || !ReadVarint(&count)) return false;
    if (class_by_id_.count(static_cast<uint32_t>(type_id)) == 0 || type_id > UINT32_MAX) {
      return Fail(pool_start, "constant pool of undeclared type " + std::to_string(type_id));
    }
    if (count > remaining() / 2) return Fail(pool_start, "pool entry count exceeds the data");
    for (uint64_t i = 0; i < count; i++) {
      uint64_t key;
      if (!ReadVarint(&key)) return false;
      PoolEntry entry;
      if (!ReadInline(static_cast<uint32_t>(type_id), 0, &entry.raw)) return false;
      // Walking newest to oldest and overwriting: the earliest checkpoint wins, like the JDK.
      pools_[{static_cast<uint32_t>(type_id), key}] = std::move(entry);
    }
  }
  if (pos_ != end_) return Fail(start, "checkpoint size does not match its content");
  return true;
}

bool JfrReader::ChunkParser::ReadCheckpoints(uint64_t newest) {
  if (newest == 0) return true;
  std::set<uint64_t> visited;
  uint64_t offset = newest;
  while (true) {
    if (!visited.insert(offset).second) {
      return Fail(chunk_start_ + offset, "checkpoint chain loops back to itself");
    }
    int64_t delta;
    if (!ReadCheckpoint(offset, &delta)) return false;
    if (delta == 0) return true;
    // Bounds on the delta itself: offset + delta could overflow for any delta the file holds.
    // offset < size <= the file size, so both bounds are small.
    const int64_t lowest = static_cast<int64_t>(kHeaderSize) - static_cast<int64_t>(offset);
    const int64_t beyond = static_cast<int64_t>(info_.size - offset);
    if (delta < lowest || delta >= beyond) {
      return Fail(chunk_start_ + offset, "checkpoint delta points outside the chunk");
    }
    offset += static_cast<uint64_t>(delta);
  }
}

JfrValue JfrReader::ChunkParser::Resolve(const JfrValue& value, int depth) {
  if (depth > kMaxNesting) return JfrValue();
  if (value.reference_) {
    if (value.type_ == nullptr) return JfrValue();
    auto it = pools_.find({value.type_->id, static_cast<uint64_t>(value.integer_)});
    if (it == pools_.end()) return JfrValue();  // missing key: null, as in the JDK
    PoolEntry& entry = it->second;
    if (entry.state == 0) {
      entry.state = 1;
      JfrValue resolved = Resolve(entry.raw, depth + 1);
      entry.resolved = std::move(resolved);
      entry.state = 2;
    }
    return entry.state == 2 ? entry.resolved : JfrValue();
  }
  if (value.kind_ != JfrValue::Kind::kObject && value.kind_ != JfrValue::Kind::kArray) {
    return value;
  }
  std::vector<JfrValue> items;
  items.reserve(value.items_->size());
  for (const JfrValue& item : *value.items_) items.push_back(Resolve(item, depth + 1));
  return value.kind_ == JfrValue::Kind::kObject ? JfrValue::Object(value.type_, std::move(items))
                                                : JfrValue::Array(std::move(items));
}

bool JfrReader::ChunkParser::ReadEvents() {
  pos_ = chunk_start_ + kHeaderSize;
  const uint32_t chunk_index = static_cast<uint32_t>(reader_->chunks_.size());
  while (pos_ < chunk_end_) {
    const uint64_t start = pos_;
    end_ = chunk_end_;
    uint64_t size, type;
    if (!ReadVarint(&size)) return false;
    if (size < 2 || size > chunk_end_ - start || size < pos_ - start + 1) {
      return Fail(start, "record size " + std::to_string(size) + " is invalid");
    }
    end_ = start + size;
    if (!ReadVarint(&type)) return false;
    if (type > 1) {
      auto it = class_by_id_.find(static_cast<uint32_t>(type));
      if (it == class_by_id_.end() || !it->second->is_event() || type > UINT32_MAX) {
        reader_->unknown_records_++;
      } else {
        const JfrClass& klass = *it->second;
        std::vector<JfrValue> fields;  // added as read, as in ReadInline
        for (const JfrField& field : klass.fields) {
          if (options_.leading_fields != 0 && fields.size() == options_.leading_fields) break;
          if (!ReadField(field, 0, &fields.emplace_back())) return false;
        }
        JfrEvent event;
        event.type = &klass;
        event.chunk = chunk_index;
        event.file_offset = start;
        event.value = Resolve(JfrValue::Object(&klass, std::move(fields)), 0);
        if (!options_.on_event || options_.on_event(event)) {
          reader_->events_.push_back(std::move(event));
        }
      }
    }
    pos_ = start + size;
  }
  return true;
}

bool JfrReader::ChunkParser::Parse(uint64_t start, uint64_t* next) {
  data_ = reader_->bytes_.data();
  if (!ReadHeader(start) || !ReadMetadata(metadata_offset_) ||
      !ReadCheckpoints(checkpoint_offset_) || !ReadEvents()) {
    return false;
  }
  reader_->chunks_.push_back(info_);
  // An unfinished chunk is the last one that can be read: what follows its published size is
  // unpublished data.
  *next = info_.generation != 0 || chunk_end_ == reader_->bytes_.size() ? 0 : chunk_end_;
  return true;
}

Status JfrReader::Read(const std::string& path, const Options& options) {
  FILE* file = fopen(path.c_str(), "rb");
  if (file == nullptr) {
    const int os_error = errno;
    return Status::Io("cannot open " + path + ": " + strerror(os_error), os_error);
  }
  std::vector<uint8_t> bytes;
  uint8_t block[1 << 16];
  size_t n;
  while ((n = fread(block, 1, sizeof(block), file)) > 0)
    bytes.insert(bytes.end(), block, block + n);
  const bool failed = ferror(file) != 0;
  const int os_error = errno;
  fclose(file);
  if (failed) return Status::Io("cannot read " + path + ": " + strerror(os_error), os_error);
  return Parse(path, std::move(bytes), options);
}

Status JfrReader::Parse(const std::string& name, std::vector<uint8_t> bytes,
                        const Options& options) {
  bytes_ = std::move(bytes);
  chunks_.clear();
  metadata_.clear();
  events_.clear();
  unknown_records_ = 0;
  met_locked_header_ = false;
  if (bytes_.empty()) return Status::InvalidArgument(name + ": offset 0: empty file");
  uint64_t start = 0;
  do {
    ChunkParser parser(this, name, options);
    if (!parser.Parse(start, &start)) {
      // A chunk being appended (file mode) or updated right now: what came before it stands.
      if (!(met_locked_header_ && options.allow_unfinished_chunks && !chunks_.empty())) {
        return Status::InvalidArgument(parser.error());
      }
      break;
    }
  } while (start != 0);

  FindClockDomains();
  contexts_.clear();
  for (size_t i = 0; i < events_.size(); i++) {
    const JfrEvent& event = events_[i];
    if (event.type_name() != "ctxprof.Context") continue;
    const int64_t start_ticks = event.start_ticks();
    // Start and duration are whatever the file says; an end beyond int64 means "open-ended".
    int64_t end_ticks;
    if (__builtin_add_overflow(start_ticks, event.Field("duration").integer(), &end_ticks)) {
      end_ticks = INT64_MAX;
    }
    contexts_[{chunk_domain_[event.chunk], ThreadKey(event.thread())}].push_back(
        ContextInterval{start_ticks, end_ticks, i, start_ticks, end_ticks});
  }
  for (auto& [tid, intervals] : contexts_) {
    std::stable_sort(intervals.begin(), intervals.end(),
                     [](const ContextInterval& a, const ContextInterval& b) {
                       return a.start_ticks < b.start_ticks;
                     });
    JoinSpanParts(&intervals);
  }
  return Status();
}

namespace {

// What identifies a context across chunks: every field of a ctxprof.Context but its time,
// thread and per-chunk id, by name (chunks of concatenated recordings may declare the type
// differently).
std::string ContextIdentity(const JfrEvent& event) {
  std::string identity;
  const std::vector<JfrField>& fields = event.type->fields;
  const std::vector<JfrValue>& values = event.value.items();
  for (size_t f = 0; f < fields.size() && f < values.size(); f++) {
    const std::string& name = fields[f].name;
    if (name == "startTime" || name == "duration" || name == "eventThread" || name == "contextId") {
      continue;
    }
    identity += name;
    const JfrValue& value = values[f];
    identity += value.is_null()                            ? std::string(1, '\x01')
                : value.kind() == JfrValue::Kind::kInteger ? '#' + std::to_string(value.integer())
                                                           : '=' + value.string();
    identity += '\0';
  }
  return identity;
}

}  // namespace

void JfrReader::JoinSpanParts(std::vector<ContextInterval>* intervals) const {
  std::vector<ContextInterval>& parts = *intervals;
  std::vector<std::string> identities;
  for (const ContextInterval& part : parts) {
    identities.push_back(ContextIdentity(events_[part.event]));
  }
  // A trace or span id names one span: all the thread's intervals with those ids are its parts,
  // whatever attributes each carries (a tracer opens a span, then sets its endpoint: two
  // intervals) and however the writer cut it (its rest may begin a tick after the cut, past a
  // record's one-tick interval of its own context at a chunk end).
  std::map<std::string, std::pair<int64_t, int64_t>> identified;  // ids -> [start, end)
  std::vector<std::string> ids;  // "trace/span", "" when the part has neither
  for (const ContextInterval& part : parts) {
    const JfrEvent& event = events_[part.event];
    const std::string trace = event.TraceId(), span = event.SpanId();
    ids.push_back(trace.empty() && span.empty() ? std::string() : trace + '/' + span);
  }
  auto has_id = [&ids](size_t i) { return !ids[i].empty(); };
  for (size_t i = 0; i < parts.size(); i++) {
    if (!has_id(i)) continue;
    auto [range, inserted] =
        identified.emplace(ids[i], std::make_pair(parts[i].start_ticks, parts[i].end_ticks));
    if (!inserted) {
      range->second.first = std::min(range->second.first, parts[i].start_ticks);
      range->second.second = std::max(range->second.second, parts[i].end_ticks);
    }
  }
  // Without ids, a part continues the one of the same context that ends where it starts.
  std::map<std::pair<std::string, int64_t>, size_t> by_start;  // (identity, start) -> part
  for (size_t i = 0; i < parts.size(); i++) {
    if (!has_id(i)) by_start.emplace(std::make_pair(identities[i], parts[i].start_ticks), i);
  }
  std::vector<size_t> next(parts.size(), SIZE_MAX);
  std::vector<bool> continues(parts.size(), false);
  for (size_t i = 0; i < parts.size(); i++) {
    if (has_id(i)) {
      const std::pair<int64_t, int64_t>& range = identified[ids[i]];
      parts[i].span_start_ticks = range.first;
      parts[i].span_end_ticks = range.second;
      continue;
    }
    auto found = by_start.find({identities[i], parts[i].end_ticks});
    if (found == by_start.end() || found->second == i || continues[found->second] ||
        parts[i].end_ticks <= parts[i].start_ticks) {
      continue;
    }
    next[i] = found->second;
    continues[found->second] = true;
  }
  for (size_t head = 0; head < parts.size(); head++) {
    if (has_id(head) || continues[head]) continue;
    size_t last = head;
    while (next[last] != SIZE_MAX) last = next[last];
    for (size_t i = head;; i = next[i]) {
      parts[i].span_start_ticks = parts[head].start_ticks;
      parts[i].span_end_ticks = parts[last].end_ticks;
      if (i == last) break;
    }
  }
}

int64_t JfrReader::ThreadKey(const JfrValue& thread) {
  const int64_t os_thread_id = thread.Field("osThreadId").integer();
  if (os_thread_id != 0) return os_thread_id;
  // Wrapping negation: any value a file holds maps without undefined behaviour.
  return static_cast<int64_t>(0 - static_cast<uint64_t>(thread.Field("javaThreadId").integer()));
}

void JfrReader::FindClockDomains() {
  chunk_domain_.clear();
  domain_anchor_.clear();
  for (uint32_t c = 0; c < chunks_.size(); c++) {
    const JfrChunkInfo& chunk = chunks_[c];
    uint32_t domain = 0;
    for (; domain < domain_anchor_.size(); domain++) {
      const JfrChunkInfo& anchor = chunks_[domain_anchor_[domain]];
      if (anchor.ticks_per_second != chunk.ticks_per_second || chunk.ticks_per_second == 0) {
        continue;
      }
      // Where the anchor's clock puts this chunk's start, against where its header does.
      const long double elapsed_nanos =
          static_cast<long double>(static_cast<int64_t>(chunk.start_ticks - anchor.start_ticks)) *
          1e9L / static_cast<long double>(chunk.ticks_per_second);
      const long double header_nanos = static_cast<long double>(static_cast<int64_t>(
          static_cast<uint64_t>(chunk.start_nanos) - static_cast<uint64_t>(anchor.start_nanos)));
      if (fabsl(elapsed_nanos - header_nanos) < 1e6L) break;
    }
    if (domain == domain_anchor_.size()) domain_anchor_.push_back(c);
    chunk_domain_.push_back(domain);
  }
}

int64_t JfrReader::TicksOnDomain(uint32_t chunk, int64_t ticks, uint32_t domain) const {
  const JfrChunkInfo& from = chunks_[chunk];
  const JfrChunkInfo& to = chunks_[domain_anchor_[domain]];
  if (from.ticks_per_second == 0 || to.ticks_per_second == 0) return INT64_MIN;
  // Differences first, so that long double keeps every nanosecond of epoch-sized values.
  const long double nanos =
      static_cast<long double>(static_cast<int64_t>(static_cast<uint64_t>(from.start_nanos) -
                                                    static_cast<uint64_t>(to.start_nanos))) +
      static_cast<long double>(
          static_cast<int64_t>(static_cast<uint64_t>(ticks) - from.start_ticks)) *
          1e9L / static_cast<long double>(from.ticks_per_second);
  const long double converted = static_cast<long double>(to.start_ticks) +
                                nanos * static_cast<long double>(to.ticks_per_second) / 1e9L;
  if (!(converted > -9.2e18L && converted < 9.2e18L)) return INT64_MIN;
  return static_cast<int64_t>(floorl(converted));
}

const JfrReader::ContextInterval* JfrReader::IntervalAt(uint32_t domain, int64_t thread_key,
                                                        int64_t ticks) const {
  auto it = contexts_.find({domain, thread_key});
  if (it == contexts_.end()) return nullptr;
  const std::vector<ContextInterval>& intervals = it->second;
  // The last interval starting at or before `ticks`.
  auto after = std::upper_bound(
      intervals.begin(), intervals.end(), ticks,
      [](int64_t t, const ContextInterval& interval) { return t < interval.start_ticks; });
  if (after == intervals.begin()) return nullptr;
  const ContextInterval& candidate = *(after - 1);
  return ticks < candidate.end_ticks ? &candidate : nullptr;
}

const JfrEvent* JfrReader::ContextAt(int64_t thread_key, int64_t ticks, int64_t* span_nanos,
                                     uint32_t chunk) const {
  if (chunk >= chunk_domain_.size()) return nullptr;
  const uint32_t home = chunk_domain_[chunk];
  const ContextInterval* found = IntervalAt(home, thread_key, ticks);
  uint32_t domain = home;
  for (uint32_t other = 0; found == nullptr && other < domain_anchor_.size(); other++) {
    if (other == home) continue;
    const int64_t converted = TicksOnDomain(chunk, ticks, other);
    if (converted != INT64_MIN) found = IntervalAt(other, thread_key, converted);
    domain = other;
  }
  if (found == nullptr) return nullptr;
  if (span_nanos != nullptr) {
    // Wrapping: any values a file holds subtract without undefined behaviour.
    const int64_t span_ticks = static_cast<int64_t>(static_cast<uint64_t>(found->span_end_ticks) -
                                                    static_cast<uint64_t>(found->span_start_ticks));
    *span_nanos =
        JavaLongOf(static_cast<double>(span_ticks) /
                   (static_cast<double>(chunks_[domain_anchor_[domain]].ticks_per_second) / 1e9));
  }
  return &events_[found->event];
}

const JfrValue& JfrEvent::thread() const {
  const JfrValue& event_thread = Field("eventThread");
  return event_thread.is_null() ? Field("sampledThread") : event_thread;
}

namespace {

// `value` as `digits` lowercase hex digits, most significant first.
std::string Hex(uint64_t value, int digits) {
  std::string hex(digits, '0');
  for (int i = digits - 1; i >= 0 && value != 0; i--, value >>= 4) {
    hex[i] = "0123456789abcdef"[value & 0xF];
  }
  return hex;
}

// The unsigned bits of an integer field (a long holds a 64-bit id).
uint64_t Bits(const JfrValue& value) { return static_cast<uint64_t>(value.integer()); }

}  // namespace

std::string JfrEvent::TraceId() const {
  const JfrValue& text = Field("traceId");  // recordings before the binary ids
  if (text.kind() == JfrValue::Kind::kString) return text.string();
  const uint64_t high = Bits(Field("traceIdHigh")), low = Bits(Field("traceIdLow"));
  return high == 0 && low == 0 ? std::string() : Hex(high, 16) + Hex(low, 16);
}

std::string JfrEvent::SpanId() const {
  const JfrValue& span = Field("spanId");
  if (span.kind() == JfrValue::Kind::kString) return span.string();
  return Bits(span) == 0 ? std::string() : Hex(Bits(span), 16);
}

int64_t JfrReader::EpochNanosOf(int64_t ticks, uint32_t chunk) const {
  if (chunks_.empty()) return 0;
  const JfrChunkInfo& first =
      chunk < chunk_domain_.size() ? chunks_[domain_anchor_[chunk_domain_[chunk]]] : chunks_[0];
  const double divisor = static_cast<double>(first.ticks_per_second) / 1e9;
  // The JDK computes in Java longs: the subtraction and the addition wrap.
  const uint64_t elapsed_ticks = static_cast<uint64_t>(ticks) - first.start_ticks;
  const int64_t elapsed_nanos =
      JavaLongOf(static_cast<double>(static_cast<int64_t>(elapsed_ticks)) / divisor);
  return static_cast<int64_t>(static_cast<uint64_t>(first.start_nanos) +
                              static_cast<uint64_t>(elapsed_nanos));
}

int64_t JfrReader::NanosOf(int64_t ticks) const {
  if (chunks_.empty()) return 0;
  return JavaLongOf(static_cast<double>(ticks) /
                    (static_cast<double>(chunks_[0].ticks_per_second) / 1e9));
}

std::vector<JfrFrame> JfrReader::FramesOf(const JfrValue& stack_trace) {
  std::vector<JfrFrame> frames;
  for (const JfrValue& frame : stack_trace.Field("frames").items()) {
    const JfrValue& method = frame.Field("method");
    JfrFrame out;
    out.class_name = method.Field("type").Field("name").string();
    out.method_name = method.Field("name").string();
    out.descriptor = method.Field("descriptor").string();
    out.line_number = static_cast<int32_t>(frame.Field("lineNumber").integer());
    out.bytecode_index = static_cast<int32_t>(frame.Field("bytecodeIndex").integer());
    out.type = frame.Field("type").string();
    frames.push_back(std::move(out));
  }
  return frames;
}

}  // namespace ctxprof
