#include "profiler/jfr/jfr_copy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "profiler/jfr/jfr_buffer.h"
#include "profiler/jfr/jfr_chunk_header.h"
#include "profiler/jfr/jfr_file.h"

namespace ctxprof {
namespace {

constexpr size_t kCopyBlock = 1 << 20;

Status ReadFully(const JfrCopySource& source, uint64_t offset, void* out, size_t length) {
  auto* bytes = static_cast<unsigned char*>(out);
  size_t done = 0;
  while (done < length) {
    const ssize_t n = pread(source.fd, bytes + done, length - done, offset + done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int os_error = n < 0 ? errno : 0;
      return Status::Io(
          "cannot read " + source.name + " at offset " + std::to_string(offset + done) + ": " +
              (n < 0 ? strerror(os_error) : "the file is shorter than its published size"),
          os_error);
    }
    done += static_cast<size_t>(n);
  }
  return Status();
}

uint64_t BigEndian(const unsigned char* bytes, int width) {
  uint64_t value = 0;
  for (int i = 0; i < width; i++) value = value << 8 | bytes[i];
  return value;
}

void PutBigEndian(uint64_t value, unsigned char* out) {
  for (int i = 0; i < 8; i++) out[i] = static_cast<unsigned char>(value >> (56 - 8 * i));
}

// A JFR varint at bytes[*pos], not past `end` (7 bits a byte, the ninth byte whole).
bool ReadVarint(const std::vector<unsigned char>& bytes, size_t end, size_t* pos, uint64_t* value) {
  uint64_t result = 0;
  for (int i = 0; i < 9 && *pos < end; i++) {
    const uint8_t byte = bytes[(*pos)++];
    if (i == 8) {
      *value = result | static_cast<uint64_t>(byte) << 56;
      return true;
    }
    result |= static_cast<uint64_t>(byte & 0x7f) << (7 * i);
    if ((byte & 0x80) == 0) {
      *value = result;
      return true;
    }
  }
  return false;
}

void PutVarint(uint64_t value, std::vector<unsigned char>* out) {
  for (int i = 0; i < 8 && value >= 0x80; i++, value >>= 7) {
    out->push_back(static_cast<unsigned char>(value | 0x80));
  }
  out->push_back(static_cast<unsigned char>(value));
}

// `width` bytes: a varint padded with continuation bits (a full 9 bytes holds any value).
void PutWideVarint(uint64_t value, int width, std::vector<unsigned char>* out) {
  for (int i = 0; i < width - 1; i++, value >>= 7) {
    out->push_back(static_cast<unsigned char>((value & 0x7f) | 0x80));
  }
  out->push_back(static_cast<unsigned char>(width == 9 ? value : value & 0x7f));
}

constexpr int kCheckpointSizeBytes = 4;  // padded, as HotSpot writes it: up to 2^28 - 1
constexpr int kDeltaBytes = 9;           // any delta, so sizes are known before offsets

// One record kept in a chunk being rewritten; checkpoint positions are chunk-relative.
struct Record {
  uint64_t offset = 0;  // in the source chunk
  uint64_t size = 0;
  uint64_t type = 0;
  bool checkpoint = false;
  uint64_t type_at = 0;   // checkpoint: its type id, then startTime and duration, from here
  uint64_t delta_at = 0;  // checkpoint: its delta from here
  uint64_t rest_at = 0;   // checkpoint: the flush mask and pools from here
  uint64_t delta = 0;
  uint64_t new_offset = 0;
  uint64_t new_size = 0;
};

// Rewrites the chunk in `chunk` without the event records at the chunk-relative offsets `drop`
// (ascending). `name` and `base` (the chunk's file offset) are for messages.
Status DropRecords(const std::string& name, uint64_t base, const std::vector<uint64_t>& drop,
                   std::vector<unsigned char>* chunk) {
  const std::vector<unsigned char>& in = *chunk;
  auto problem = [&](uint64_t offset, const char* what) {
    return Status::Io(name + ": offset " + std::to_string(base + offset) + ": " + what, 0);
  };
  if ((BigEndian(in.data() + kChunkFlagsOffset, 2) & kChunkFlagCompressedInts) == 0) {
    return problem(0, "a chunk without compressed integers cannot have records left out");
  }
  // Pass 1: the records kept, with their sizes and offsets in the copy.
  std::vector<Record> kept;
  size_t next_drop = 0;
  uint64_t written = kChunkHeaderSize;
  for (uint64_t offset = kChunkHeaderSize; offset < in.size();) {
    Record record;
    record.offset = offset;
    size_t pos = offset;
    if (!ReadVarint(in, in.size(), &pos, &record.size) || record.size == 0 ||
        record.size > in.size() - offset) {
      return problem(offset, "not a record");
    }
    const size_t end = offset + record.size;
    record.type_at = pos;
    if (!ReadVarint(in, end, &pos, &record.type)) return problem(offset, "not a record");
    while (next_drop < drop.size() && drop[next_drop] < offset) next_drop++;
    const bool dropped = next_drop < drop.size() && drop[next_drop] == offset && record.type > 1;
    if (!dropped) {
      record.new_size = record.size;
      record.checkpoint = record.type == 1;
      if (record.checkpoint) {  // size, type, startTime, duration, delta, the rest
        uint64_t time = 0;
        if (!ReadVarint(in, end, &pos, &time) || !ReadVarint(in, end, &pos, &time)) {
          return problem(offset, "a checkpoint without its times");
        }
        record.delta_at = pos;
        if (!ReadVarint(in, end, &pos, &record.delta)) {
          return problem(offset, "a checkpoint without its delta");
        }
        record.rest_at = pos;
        record.new_size = kCheckpointSizeBytes + (record.delta_at - record.type_at) +
                          (record.delta == 0 ? 1 : kDeltaBytes) + (end - record.rest_at);
      }
      record.new_offset = written;
      written += record.new_size;
      kept.push_back(record);
    }
    offset = end;
  }
  // Where the records a header or a delta points at (checkpoints, metadata) went.
  std::unordered_map<uint64_t, uint64_t> targets;
  for (const Record& record : kept) {
    if (record.type <= 1) targets[record.offset] = record.new_offset;
  }
  auto moved = [&targets](uint64_t old_offset, uint64_t* new_offset) {
    const auto found = targets.find(old_offset);
    if (found == targets.end()) return false;
    *new_offset = found->second;
    return true;
  };
  // Pass 2: the bytes, checkpoints re-encoded with their moved deltas.
  std::vector<unsigned char> out(in.begin(), in.begin() + kChunkHeaderSize);
  out.reserve(written);
  for (const Record& record : kept) {
    if (!record.checkpoint) {
      out.insert(out.end(), in.begin() + record.offset, in.begin() + record.offset + record.size);
      continue;
    }
    uint64_t previous = 0;
    if (record.delta != 0 && !moved(record.offset + record.delta, &previous)) {
      return problem(record.offset, "a checkpoint whose delta leads to no checkpoint");
    }
    if (record.new_size >= (1u << 28)) return problem(record.offset, "a checkpoint over 256 MiB");
    PutWideVarint(record.new_size, kCheckpointSizeBytes, &out);
    out.insert(out.end(), in.begin() + record.type_at, in.begin() + record.delta_at);
    if (record.delta == 0) {
      PutVarint(0, &out);
    } else {
      PutWideVarint(previous - record.new_offset, kDeltaBytes, &out);
    }
    out.insert(out.end(), in.begin() + record.rest_at, in.begin() + record.offset + record.size);
  }
  uint64_t checkpoint = BigEndian(in.data() + kChunkCheckpointOffset, 8);
  uint64_t metadata = BigEndian(in.data() + kChunkMetadataOffset, 8);
  if ((checkpoint != 0 && !moved(checkpoint, &checkpoint)) ||
      (metadata != 0 && !moved(metadata, &metadata))) {
    return problem(0, "a header offset that is not a record");
  }
  PutBigEndian(out.size(), out.data() + kChunkSizeOffset);
  PutBigEndian(checkpoint, out.data() + kChunkCheckpointOffset);
  PutBigEndian(metadata, out.data() + kChunkMetadataOffset);
  *chunk = std::move(out);
  return Status();
}

// A bounds-checked cursor over one chunk in memory: a read past the end sets `failed` and
// returns 0, so a parse loop ends and the caller reports the offset.
struct Cursor {
  const unsigned char* data;
  size_t size;
  size_t at;
  bool failed = false;

  uint64_t Varint() {
    uint64_t value = 0;
    for (int i = 0; i < 9; i++) {
      if (at >= size) break;
      const unsigned char byte = data[at++];
      if (i == 8) return value | static_cast<uint64_t>(byte) << 56;  // 9th byte: 8 full bits
      value |= static_cast<uint64_t>(byte & 0x7F) << (7 * i);
      if (byte < 0x80) return value;
    }
    failed = true;
    return 0;
  }
  unsigned char Byte() {
    if (at < size) return data[at++];
    failed = true;
    return 0;
  }
  // Skips `count` varints: a byte below 0x80 ends one, and so does a 9th byte. Eight bytes at a
  // time while they hold no more ends than wanted and no run of eight continuation bytes.
  void SkipVarints(uint64_t count) {
    int run = 0;  // continuation bytes so far in the current varint
    while (count >= 8 && size - at >= 8) {
      uint64_t word;
      memcpy(&word, data + at, sizeof(word));  // little-endian: data[at] is the low byte
      const uint64_t ends = ~word & 0x8080808080808080ULL;
      if (ends == 0 || run + __builtin_ctzll(ends) / 8 >= 8) break;
      count -= static_cast<uint64_t>(__builtin_popcountll(ends));
      run = __builtin_clzll(ends) / 8;  // continuation bytes after the word's last end
      at += 8;
    }
    while (count != 0) {
      if (at >= size) {
        failed = true;
        return;
      }
      if (data[at++] < 0x80 || run == 8) {
        count--;
        run = 0;
      } else {
        run++;
      }
    }
  }
  void Skip(uint64_t length) {
    if (length <= size - at) {
      at += length;
    } else {
      failed = true;
      at = size;
    }
  }
  // A string value (any JFR encoding); `text` receives it for encodings 3 and 5 (the metadata's
  // names are ASCII; other encodings are skipped, leaving it empty).
  void String(std::string* text) {
    const unsigned char encoding = Byte();
    if (text != nullptr) text->clear();
    if (encoding == 0 || encoding == 1) return;  // null, ""
    const uint64_t length = Varint();
    if (encoding == 2) return;  // a String pool key: `length` was the key
    if (encoding == 4) {        // UTF-16 units, each a varint
      for (uint64_t i = 0; i < length && !failed; i++) Varint();
      return;
    }
    if (encoding != 3 && encoding != 5) {
      failed = true;
      return;
    }
    const size_t start = at;
    Skip(length);
    if (text != nullptr && !failed)
      text->assign(reinterpret_cast<const char*>(data) + start, length);
  }
};

// How the values of one metadata class are laid out on the wire: a primitive, or its fields in
// order (a struct; a pool entry's value is the struct of its type).
struct WireType;
struct WireField {
  uint64_t type;
  bool array;   // dimension="1"
  bool pooled;  // constantPool: a varint key instead of the value
  std::string name;
  const WireType* wire = nullptr;  // `type`'s layout, once PackPools resolved it
  int slot = -1;                   // pooled: PackPools' index of `type` (-1: none)
};
struct WireType {
  enum Kind { kStruct, kByte, kVarint, kFloat, kDouble, kString } kind = kStruct;
  std::vector<WireField> fields;
};
using WireTypes = std::unordered_map<uint64_t, WireType>;

WireType::Kind PrimitiveKind(const std::string& name) {
  if (name == "boolean" || name == "byte") return WireType::kByte;
  if (name == "char" || name == "short" || name == "int" || name == "long")
    return WireType::kVarint;
  if (name == "float") return WireType::kFloat;
  if (name == "double") return WireType::kDouble;
  if (name == "java.lang.String") return WireType::kString;
  return WireType::kStruct;
}

constexpr int kMaxNesting = 64;

// One element of the metadata tree (5.2 of the format note) and its children; collects every
// `class` element's layout into *types.
bool ParseElement(Cursor* in, const std::vector<std::string>& strings, int depth, WireTypes* types,
                  WireType* enclosing_class) {
  auto text = [&strings, in](uint64_t index) -> const std::string& {
    static const std::string kNone;
    if (index < strings.size()) return strings[index];
    in->failed = true;
    return kNone;
  };
  if (depth > kMaxNesting) return false;
  const std::string& name = text(in->Varint());
  const uint64_t attributes = in->Varint();
  std::string class_name;
  uint64_t id = 0, field_class = 0;
  bool has_id = false, array = false, pooled = false;
  for (uint64_t i = 0; i < attributes && !in->failed; i++) {
    const std::string& key = text(in->Varint());
    const std::string& value = text(in->Varint());
    if (key == "name") class_name = value;
    if (key == "id") {
      char* end = nullptr;
      id = strtoull(value.c_str(), &end, 10);
      has_id = !value.empty() && *end == '\0';
    }
    if (key == "class") field_class = strtoull(value.c_str(), nullptr, 10);
    if (key == "dimension") array = value == "1";
    if (key == "constantPool") pooled = true;  // presence, whatever its value (JDK rule)
  }
  WireType* current = nullptr;
  if (name == "class" && has_id) {
    current = &(*types)[id];
    current->kind = PrimitiveKind(class_name);
  } else if (name == "field" && enclosing_class != nullptr) {
    enclosing_class->fields.push_back(WireField{field_class, array, pooled, class_name});
  }
  const uint64_t children = in->Varint();
  for (uint64_t i = 0; i < children && !in->failed; i++) {
    if (!ParseElement(in, strings, depth + 1, types, current)) return false;
  }
  return !in->failed;
}

// The metadata record at `in` (after its size and type id): its id, and unless `types` is null
// the wire types.
bool ParseMetadata(Cursor* in, uint64_t* metadata_id, WireTypes* types) {
  in->Varint();  // start time
  in->Varint();  // duration
  *metadata_id = in->Varint();
  if (types == nullptr) return !in->failed;
  const uint64_t count = in->Varint();
  if (count > in->size - in->at) return false;  // every string takes at least a byte
  std::vector<std::string> strings(count);
  for (std::string& text : strings) in->String(&text);
  return !in->failed && ParseElement(in, strings, 0, types, nullptr);
}

// A type's wire layout flattened into steps, so that skipping a pool entry is a loop over a few
// steps instead of a walk of the metadata: kArray's element is the `length` steps after it.
// Varints in a row are one step (a stack frame is four).
struct SkipStep {
  WireType::Kind kind;  // kStruct marks an array
  uint32_t length;      // kVarint: how many; kStruct: the steps of an element
};

// Builds the steps of one type.
struct SkipCompiler {
  const WireTypes& types;
  std::vector<SkipStep>* steps;
  size_t barrier = 0;  // steps before it are closed: a varint must not join them

  void Push(WireType::Kind kind) {
    if (kind == WireType::kVarint && steps->size() > barrier &&
        steps->back().kind == WireType::kVarint) {
      steps->back().length++;
    } else {
      steps->push_back(SkipStep{kind, kind == WireType::kVarint ? 1u : 0u});
    }
  }
  // Appends the steps of a value of `type`; false for a type the metadata does not lay out or
  // nesting beyond kMaxNesting.
  bool Compile(uint64_t type, int depth) {
    const auto found = types.find(type);
    if (found == types.end() || depth > kMaxNesting) return false;
    if (found->second.kind != WireType::kStruct) {
      Push(found->second.kind);
      return true;
    }
    for (const WireField& field : found->second.fields) {
      const size_t array = steps->size();
      if (field.array) {
        steps->push_back(SkipStep{WireType::kStruct, 0});
        barrier = steps->size();
      }
      if (field.pooled) {
        Push(WireType::kVarint);
      } else if (!Compile(field.type, depth + 1)) {
        return false;
      }
      if (field.array) {
        (*steps)[array].length = static_cast<uint32_t>(steps->size() - array - 1);
        barrier = steps->size();
      }
    }
    return true;
  }
};

// Skips one value laid out by steps [step, end).
bool RunSkip(Cursor* in, const SkipStep* step, const SkipStep* end) {
  for (; step < end && !in->failed; step++) {
    switch (step->kind) {
      case WireType::kByte:
        in->Skip(1);
        break;
      case WireType::kVarint:
        in->SkipVarints(step->length);
        break;
      case WireType::kFloat:
        in->Skip(4);
        break;
      case WireType::kDouble:
        in->Skip(8);
        break;
      case WireType::kString:
        in->String(nullptr);
        break;
      case WireType::kStruct: {
        uint64_t count = in->Varint();
        // Every element takes a byte, or its steps are none: bounded either way.
        if (count > in->size - in->at) return false;
        if (step->length == 1 && step[1].kind == WireType::kVarint) {  // e.g. stack frames
          in->SkipVarints(count * step[1].length);
          count = 0;
        }
        for (uint64_t i = 0; i < count && step->length != 0; i++) {
          if (!RunSkip(in, step + 1, step + 1 + step->length)) return false;
        }
        step += step->length;
        break;
      }
    }
  }
  return !in->failed;
}

// Keys seen so far: a bitmap for the small keys writers use (sequences, tids, dictionary ids),
// a hash set above it.
class KeySet {
 public:
  // True when `key` was not in the set; adds it.
  bool Insert(uint64_t key) {
    if (key >= kDenseKeys) return large_.insert(key).second;
    const size_t word = static_cast<size_t>(key / 64);
    if (word >= dense_.size()) dense_.resize(std::max(word + 1, 2 * dense_.size()), 0);
    const uint64_t bit = uint64_t{1} << (key % 64);
    if (dense_[word] & bit) return false;
    dense_[word] |= bit;
    return true;
  }

 private:
  static constexpr uint64_t kDenseKeys = uint64_t{1} << 26;  // at most 8 MiB of bitmap
  std::vector<uint64_t> dense_;
  std::unordered_set<uint64_t> large_;
};

// The distinct entries of one pool type, as their wire bytes (key and value), in first-seen
// order.
struct CompactPool {
  explicit CompactPool(uint64_t pool_type) : type(pool_type) {}
  uint64_t type;
  uint64_t count = 0;
  std::vector<unsigned char> entries;
  KeySet keys;
  std::vector<SkipStep> skip;  // the layout of an entry's value; empty until compiled
};

// What CompactChunks gathers from the chunks.
struct Compaction {
  explicit Compaction(const JfrCompactOptions* compact_options) : options(compact_options) {}
  const JfrCompactOptions* options;
  WireTypes types;
  uint64_t metadata_id = 0;
  std::vector<CompactPool> pools;  // in the order their types first appear
  std::unordered_map<uint64_t, size_t> pool_of_type;
  std::unordered_set<uint64_t> event_types;  // of the event records met
  uint64_t last_checkpoint_ticks = 0;

  CompactPool& PoolOf(uint64_t type) {
    const auto [it, inserted] = pool_of_type.try_emplace(type, pools.size());
    if (inserted) pools.emplace_back(type);
    return pools[it->second];
  }
};

bool Contains(const std::vector<uint64_t>& types, uint64_t type) {
  return std::find(types.begin(), types.end(), type) != types.end();
}

// Byte ranges [first, second) of a chunk.
using Ranges = std::vector<std::pair<size_t, size_t>>;

// Walks the records of one chunk (its bytes in `chunk`): the ranges of the kept event records go
// to *events (adjacent ones joined), new pool entries to *compaction; the first chunk's metadata
// record (parsed) is appended to *metadata. Returns the chunk-relative offset of a malformed
// record, or 0.
size_t WalkChunk(const std::vector<unsigned char>& chunk, bool first, bool last,
                 Compaction* compaction, std::vector<unsigned char>* metadata, Ranges* events) {
  Cursor in{chunk.data(), chunk.size(), kChunkHeaderSize};
  while (in.at < chunk.size()) {
    const size_t start = in.at;
    const uint64_t size = in.Varint();
    const uint64_t type = in.Varint();
    if (in.failed || size < 2 || size > chunk.size() - start) return start;
    Cursor record{chunk.data(), start + size, in.at};
    if (type == 0) {
      uint64_t metadata_id = 0;
      const bool first_metadata = first && metadata->empty();
      if (!ParseMetadata(&record, &metadata_id, first_metadata ? &compaction->types : nullptr)) {
        return start;
      }
      if (first_metadata) {
        compaction->metadata_id = metadata_id;
        metadata->insert(metadata->end(), chunk.begin() + start, chunk.begin() + start + size);
      } else if (metadata_id != compaction->metadata_id) {
        return start;  // other declarations: the events could not share one metadata record
      }
    } else if (type == 1) {
      compaction->last_checkpoint_ticks = record.Varint();
      record.Varint();  // duration
      record.Varint();  // delta to the previous checkpoint
      record.Byte();    // type mask
      const uint64_t pools = record.Varint();
      for (uint64_t p = 0; p < pools && !record.failed; p++) {
        CompactPool& pool = compaction->PoolOf(record.Varint());
        if (pool.skip.empty() &&
            !SkipCompiler{compaction->types, &pool.skip}.Compile(pool.type, 0)) {
          return start;
        }
        const SkipStep* skip_end = pool.skip.data() + pool.skip.size();
        const uint64_t count = record.Varint();
        if (count == 0 || count > record.size - record.at) return start;
        for (uint64_t e = 0; e < count && !record.failed; e++) {
          const size_t entry = record.at;
          const uint64_t key = record.Varint();
          if (!RunSkip(&record, pool.skip.data(), skip_end)) return start;
          if (pool.keys.Insert(key)) {
            pool.entries.insert(pool.entries.end(), chunk.begin() + entry,
                                chunk.begin() + record.at);
            pool.count++;
          }
        }
      }
      if (record.failed || record.at != record.size) return start;
    } else {
      compaction->event_types.insert(type);
      if ((first || !Contains(compaction->options->first_chunk_only, type)) &&
          (last || !Contains(compaction->options->last_chunk_only, type))) {
        if (!events->empty() && events->back().second == start) {
          events->back().second = start + size;
        } else {
          events->emplace_back(start, start + size);
        }
      }
    }
    in.at = start + size;
  }
  return 0;
}

// Walks one value laid out by the metadata from `in` (fields resolved: WireField::wire), handing
// each pooled key to `visit` (with its field), which returns the key to write in its place; with
// `out`, the bytes walked are copied there with those keys (Flush appends the rest).
template <typename Visit>
struct ValueWalker {
  Cursor in;
  Visit& visit;
  std::vector<unsigned char>* out = nullptr;
  size_t copied = 0;  // out holds the bytes before it

  bool Value(const WireType* wire, int depth) {
    if (wire == nullptr || depth > kMaxNesting) return false;
    switch (wire->kind) {
      case WireType::kByte:
        in.Skip(1);
        break;
      case WireType::kVarint:
        in.Varint();
        break;
      case WireType::kFloat:
        in.Skip(4);
        break;
      case WireType::kDouble:
        in.Skip(8);
        break;
      case WireType::kString:
        in.String(nullptr);
        break;
      case WireType::kStruct:
        for (const WireField& field : wire->fields) {
          if (!Field(field, depth)) return false;
        }
        break;
    }
    return !in.failed;
  }
  bool Field(const WireField& field, int depth) {
    const uint64_t count = field.array ? in.Varint() : 1;
    if (count > in.size - in.at + 1) return false;  // a pool key or a value takes a byte
    for (uint64_t i = 0; i < count && !in.failed; i++) {
      if (!field.pooled) {
        if (!Value(field.wire, depth + 1)) return false;
        continue;
      }
      const size_t at = in.at;
      const uint64_t key = in.Varint();
      const uint64_t written = visit(field, key);
      if (out != nullptr && written != key) {
        out->insert(out->end(), in.data + copied, in.data + at);
        PutVarint(written, out);
        copied = in.at;
      }
    }
    return !in.failed;
  }
  void Flush() {
    out->insert(out->end(), in.data + copied, in.data + in.at);
    copied = in.at;
  }
};

// The pool types a value of `type` refers to, directly or through the structs it holds.
void CollectPooledTypes(const WireTypes& types, uint64_t type, int depth,
                        std::unordered_set<uint64_t>* pooled) {
  const auto found = types.find(type);
  if (found == types.end() || depth > kMaxNesting) return;
  for (const WireField& field : found->second.fields) {
    if (field.pooled) {
      pooled->insert(field.type);
    } else {
      CollectPooledTypes(types, field.type, depth + 1, pooled);
    }
  }
}

// One entry of a CompactPool: its key and where its bytes (key and value) are in `entries`.
struct PoolEntry {
  uint64_t key;
  size_t begin, end;
};
using PoolEntries = std::vector<std::vector<PoolEntry>>;  // per pool of a Compaction

// The entries of every pool; false when one does not walk.
bool SplitEntries(const std::vector<CompactPool>& pools, PoolEntries* entries) {
  entries->assign(pools.size(), {});
  for (size_t p = 0; p < pools.size(); p++) {
    Cursor in{pools[p].entries.data(), pools[p].entries.size(), 0};
    while (in.at < in.size) {
      const size_t begin = in.at;
      const uint64_t key = in.Varint();
      if (!RunSkip(&in, pools[p].skip.data(), pools[p].skip.data() + pools[p].skip.size())) {
        return false;
      }
      (*entries)[p].push_back(PoolEntry{key, begin, in.at});
    }
  }
  return true;
}

// Walks the value of `entry` of `pool` (whose layout is `wire`) with `visit`, appending it to
// `out` when given.
template <typename Visit>
bool WalkEntry(const WireType* wire, const CompactPool& pool, const PoolEntry& entry, Visit& visit,
               std::vector<unsigned char>* out) {
  ValueWalker<Visit> walker{Cursor{pool.entries.data(), entry.end, entry.begin}, visit, out};
  walker.in.Varint();  // the key
  walker.copied = walker.in.at;
  if (!walker.Value(wire, 0) || walker.in.at != entry.end) return false;
  if (out != nullptr) walker.Flush();
  return true;
}

// Per key of one pool type, a number (a count, a new key; 0 = none): a vector for the small keys
// writers use, a hash map above.
class KeyNumbers {
 public:
  uint64_t& operator[](uint64_t key) {
    if (key >= kDenseKeys) return sparse_[key];
    if (key >= dense_.size()) {
      dense_.resize(std::min<size_t>(std::max<size_t>(key + 1, 2 * dense_.size()), kDenseKeys), 0);
    }
    return dense_[key];
  }
  uint64_t Get(uint64_t key) const {
    if (key < dense_.size()) return dense_[key];
    const auto found = key >= kDenseKeys ? sparse_.find(key) : sparse_.end();
    return found == sparse_.end() ? 0 : found->second;
  }

 private:
  static constexpr uint64_t kDenseKeys = uint64_t{1} << 20;  // at most 8 MiB
  std::vector<uint64_t> dense_;
  std::unordered_map<uint64_t, uint64_t> sparse_;
};

// What packing (JfrCompactOptions::renumber_by_use) works with: the pools, their entries, and
// per renumbered type (its slot) its pool and the uses of its keys.
struct Packing {
  std::vector<CompactPool>& pools;
  PoolEntries entries;
  std::vector<size_t> pool_of_slot;
  std::vector<const WireType*> wire_of_pool;
  std::vector<KeyNumbers> uses;     // per slot
  std::vector<KeyNumbers> new_key;  // per slot

  // Counts the references of the entries of pool `p`.
  bool Count(size_t p);
};

bool Packing::Count(size_t p) {
  auto count = [this](const WireField& field, uint64_t key) {
    if (field.slot >= 0) uses[field.slot][key]++;
    return key;
  };
  for (const PoolEntry& entry : entries[p]) {
    if (!WalkEntry(wire_of_pool[p], pools[p], entry, count, nullptr)) return false;
  }
  return true;
}

// Packs the pools of a run folded into one chunk (JfrCompactOptions::renumber_by_use); leaves
// them as they are when an entry does not walk.
void PackPools(const JfrCompactOptions& options, Compaction* compaction) {
  Packing packing{compaction->pools};
  std::vector<CompactPool>& pools = compaction->pools;
  WireTypes& types = compaction->types;
  std::unordered_set<uint64_t> event_referenced;
  for (uint64_t type : compaction->event_types) {
    CollectPooledTypes(types, type, 0, &event_referenced);
  }
  std::unordered_map<uint64_t, int> slot_of_type;
  for (uint64_t type : options.renumber_by_use) {
    const auto pool = compaction->pool_of_type.find(type);
    if (pool == compaction->pool_of_type.end() || event_referenced.count(type) != 0 ||
        slot_of_type.count(type) != 0) {
      continue;
    }
    slot_of_type[type] = static_cast<int>(packing.pool_of_slot.size());
    packing.pool_of_slot.push_back(pool->second);
  }
  if (slot_of_type.empty() || !SplitEntries(pools, &packing.entries)) return;
  for (auto& [id, type] : types) {
    for (WireField& field : type.fields) {
      const auto wire = types.find(field.type);
      field.wire = wire == types.end() ? nullptr : &wire->second;
      const auto slot = slot_of_type.find(field.type);
      field.slot = field.pooled && slot != slot_of_type.end() ? slot->second : -1;
    }
  }
  for (const CompactPool& pool : pools) {
    const auto wire = types.find(pool.type);
    packing.wire_of_pool.push_back(wire == types.end() ? nullptr : &wire->second);
  }
  const size_t slots = packing.pool_of_slot.size();
  packing.uses.resize(slots);
  packing.new_key.resize(slots);
  for (size_t p = 0; p < pools.size(); p++) {
    if (!packing.Count(p)) return;
  }
  // New keys: 1, 2, ... by descending use (ties in first-seen order), skipping keys that are
  // referred to without an entry (0 for none): they keep their meaning. The entries of each
  // pool in that order, those nothing refers to left out; every entry of the other pools.
  std::vector<std::vector<size_t>> kept(pools.size());
  std::vector<int> slot_of_pool(pools.size(), -1);
  for (size_t slot = 0; slot < slots; slot++) slot_of_pool[packing.pool_of_slot[slot]] = slot;
  for (size_t p = 0; p < pools.size(); p++) {
    const int slot = slot_of_pool[p];
    const std::vector<PoolEntry>& entries = packing.entries[p];
    for (size_t e = 0; e < entries.size(); e++) {
      if (slot < 0 || packing.uses[slot].Get(entries[e].key) != 0) kept[p].push_back(e);
    }
    if (slot < 0) continue;
    const KeyNumbers& used = packing.uses[slot];
    std::stable_sort(kept[p].begin(), kept[p].end(), [&](size_t a, size_t b) {
      return used.Get(entries[a].key) > used.Get(entries[b].key);
    });
    KeyNumbers has_entry;
    for (const PoolEntry& entry : entries) has_entry[entry.key] = 1;
    uint64_t next = 1;
    for (size_t e : kept[p]) {
      while (used.Get(next) != 0 && has_entry.Get(next) == 0) next++;
      packing.new_key[slot][entries[e].key] = next++;
    }
  }
  auto rewrite = [&packing](const WireField& field, uint64_t key) {
    if (field.slot < 0) return key;
    const uint64_t renumbered = packing.new_key[field.slot].Get(key);
    return renumbered != 0 ? renumbered : key;
  };
  std::vector<std::vector<unsigned char>> packed(pools.size());
  for (size_t p = 0; p < pools.size(); p++) {
    const int slot = slot_of_pool[p];
    packed[p].reserve(pools[p].entries.size());
    for (size_t e : kept[p]) {
      const PoolEntry& entry = packing.entries[p][e];
      PutVarint(slot < 0 ? entry.key : packing.new_key[slot].Get(entry.key), &packed[p]);
      if (!WalkEntry(packing.wire_of_pool[p], pools[p], entry, rewrite, &packed[p])) return;
    }
  }
  for (size_t p = 0; p < pools.size(); p++) {
    pools[p].entries = std::move(packed[p]);
    pools[p].count = kept[p].size();  // 0: nothing refers to its entries; the pool is left out
  }
}

// Checks that `path` may be replaced by a rename: a regular file with one link.
bool IsPlainFile(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1;
}

}  // namespace

Status CopyChunks(const std::vector<JfrCopySource>& sources, const std::string& path) {
  // Opening truncates: never the recording itself.
  struct stat target;
  if (stat(path.c_str(), &target) == 0) {
    for (const JfrCopySource& source : sources) {
      struct stat file;
      if (fstat(source.fd, &file) == 0 && file.st_dev == target.st_dev &&
          file.st_ino == target.st_ino) {
        return Status::InvalidArgument("cannot dump into " + path +
                                       ": it is the recording being written");
      }
    }
  }
  JfrFile out;
  if (Status opened = out.Open(path); !opened.ok()) return opened;
  std::vector<unsigned char> block(kCopyBlock);
  uint64_t last_chunk = UINT64_MAX;  // in the copy
  uint16_t last_flags = 0;
  for (const JfrCopySource& source : sources) {
    for (uint64_t chunk = 0; chunk < source.bytes;) {
      unsigned char header[kChunkHeaderSize];
      if (source.bytes - chunk < kChunkHeaderSize) {
        return Status::Io(source.name + ": offset " + std::to_string(chunk) + ": not a whole chunk",
                          0);
      }
      if (Status read = ReadFully(source, chunk, header, kChunkHeaderSize); !read.ok()) return read;
      const uint64_t size = BigEndian(header + kChunkSizeOffset, 8);
      if (memcmp(header, "FLR\0", 4) != 0 || size < kChunkHeaderSize ||
          size > source.bytes - chunk || header[kChunkGenerationOffset] != 0) {
        return Status::Io(source.name + ": offset " + std::to_string(chunk) +
                              ": not a finished chunk that fits the published " +
                              std::to_string(source.bytes) + " bytes",
                          0);
      }
      last_chunk = out.size();
      last_flags = static_cast<uint16_t>(BigEndian(header + kChunkFlagsOffset, 2));
      std::vector<uint64_t> drop;  // chunk-relative
      for (uint64_t offset : source.drop) {
        if (offset >= chunk && offset < chunk + size) drop.push_back(offset - chunk);
      }
      if (!drop.empty()) {
        std::vector<unsigned char> whole(size);
        Status rewritten = ReadFully(source, chunk, whole.data(), size);
        if (rewritten.ok()) rewritten = DropRecords(source.name, chunk, drop, &whole);
        if (rewritten.ok()) rewritten = out.Append(whole.data(), whole.size());
        if (!rewritten.ok()) return rewritten;
        chunk += size;
        continue;
      }
      for (uint64_t done = 0; done < size;) {
        const size_t length = static_cast<size_t>(std::min<uint64_t>(kCopyBlock, size - done));
        Status copied = ReadFully(source, chunk + done, block.data(), length);
        if (copied.ok()) copied = out.Append(block.data(), length);
        if (!copied.ok()) return copied;
        done += length;
      }
      chunk += size;
    }
  }
  if (last_chunk == UINT64_MAX) {
    return Status::WrongState("nothing to copy into " + path + ": no chunk has been published yet");
  }
  // The copy's last chunk ends the recording: its writer goes on, but this file is complete.
  const uint16_t flags = last_flags | kChunkFlagFinal;
  const unsigned char encoded[2] = {static_cast<unsigned char>(flags >> 8),
                                    static_cast<unsigned char>(flags)};
  Status finished = out.WriteAt(last_chunk + kChunkFlagsOffset, encoded, sizeof(encoded));
  return finished.ok() ? out.Close() : finished;
}

namespace {

// A chunk of the input: where it is, and its header.
struct SourceChunk {
  uint64_t offset;
  uint64_t size;
  unsigned char header[kChunkHeaderSize];
};

// Appends chunks [first, last) of `source`, folded into one, to `out`; with `whole_file` (they are
// all the file's chunks) its pools packed (PackPools).
Status AppendFolded(const JfrCopySource& source, const std::vector<SourceChunk>& chunks,
                    size_t first, size_t last, bool whole_file, const JfrCompactOptions& options,
                    JfrFile* out) {
  const uint64_t chunk_start = out->size();
  const unsigned char* first_header = chunks[first].header;
  Status status = out->Append(first_header, kChunkHeaderSize);  // patched at the end
  Compaction compaction(&options);
  std::vector<unsigned char> chunk, metadata;
  Ranges events;
  int64_t end_nanos = 0;
  for (size_t i = first; i < last && status.ok(); i++) {
    const SourceChunk& source_chunk = chunks[i];
    end_nanos =
        std::max<int64_t>(end_nanos, static_cast<int64_t>(BigEndian(source_chunk.header + 32, 8) +
                                                          BigEndian(source_chunk.header + 40, 8)));
    chunk.resize(source_chunk.size);
    status = ReadFully(source, source_chunk.offset, chunk.data(), chunk.size());
    if (!status.ok()) break;
    events.clear();
    const size_t bad = WalkChunk(chunk, i == first, i + 1 == last, &compaction, &metadata, &events);
    if (bad != 0 || metadata.empty()) {
      return Status::InvalidArgument(
          source.name + ": offset " + std::to_string(source_chunk.offset + bad) +
          (metadata.empty() ? ": the chunk has no metadata"
                            : ": a record that cannot join one chunk (malformed, a type the "
                              "metadata does not lay out, or other metadata)") +
          ", not compacted");
    }
    if (i == first) status = out->Append(metadata.data(), metadata.size());
    for (size_t r = 0; r < events.size() && status.ok(); r++) {
      status = out->Append(chunk.data() + events[r].first, events[r].second - events[r].first);
    }
  }
  if (!status.ok()) return status;
  if (whole_file) PackPools(options, &compaction);

  // One checkpoint with every pool (5.1 of the format note): size (padded varint), type 1,
  // start, duration 0, delta 0 (the only one), the flush mask, the pools (but those packing
  // emptied: the JDK rejects a pool without entries).
  const uint64_t checkpoint_offset = out->size() - chunk_start;
  uint64_t body = 0, pools = 0;
  for (const CompactPool& pool : compaction.pools) {
    if (pool.count == 0) continue;
    pools++;
    body += JfrBuffer::VarintLength(pool.type) + JfrBuffer::VarintLength(pool.count) +
            pool.entries.size();
  }
  JfrBuffer head;
  const size_t size_at = head.ReservePaddedVarint();
  head.PutVarint(1);
  head.PutVarint(compaction.last_checkpoint_ticks);
  head.PutVarint(0);
  head.PutVarint(0);
  head.PutByte(1);  // flush
  head.PutVarint(pools);
  head.PatchVarint(size_at, head.size() + body);
  status = out->Append(head.data(), head.size());
  for (const CompactPool& pool : compaction.pools) {
    if (!status.ok()) return status;
    if (pool.count == 0) continue;
    JfrBuffer pool_head;
    pool_head.PutVarint(pool.type);
    pool_head.PutVarint(pool.count);
    status = out->Append(pool_head.data(), pool_head.size());
    if (status.ok()) status = out->Append(pool.entries.data(), pool.entries.size());
  }
  if (!status.ok()) return status;

  // Finished from the start: nobody reads the file being written.
  unsigned char header[kChunkHeaderSize];
  memcpy(header, first_header, kChunkHeaderSize);
  PutBigEndian(out->size() - chunk_start, header + kChunkSizeOffset);
  PutBigEndian(checkpoint_offset, header + 16);
  PutBigEndian(kChunkHeaderSize, header + 24);  // the metadata record follows the header
  PutBigEndian(static_cast<uint64_t>(end_nanos) - BigEndian(first_header + 32, 8), header + 40);
  header[kChunkGenerationOffset] = 0;
  memcpy(header + kChunkFlagsOffset, chunks[last - 1].header + kChunkFlagsOffset, 2);
  return out->WriteAt(chunk_start, header, kChunkHeaderSize);
}

}  // namespace

Status CompactChunks(const std::string& path, const JfrCompactOptions& options) {
  if (!IsPlainFile(path)) return Status();
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int os_error = errno;
    return Status::Io(
        "cannot open recording file " + path + " to compact it: " + strerror(os_error), os_error);
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int os_error = errno;
    close(fd);
    return Status::Io("cannot stat recording file " + path + ": " + strerror(os_error), os_error);
  }
  const JfrCopySource source{path, fd, static_cast<uint64_t>(st.st_size)};
  // The headers first: a file that is not whole finished chunks is left alone, and so is one
  // where no chunk continues the one before it.
  std::vector<SourceChunk> chunks;
  bool foldable = false;
  for (uint64_t offset = 0; offset < source.bytes;) {
    SourceChunk chunk{offset, 0, {}};
    Status read = source.bytes - offset < kChunkHeaderSize
                      ? Status::InvalidArgument(path + ": offset " + std::to_string(offset) +
                                                ": not a whole chunk, not compacted")
                      : ReadFully(source, offset, chunk.header, kChunkHeaderSize);
    chunk.size = read.ok() ? BigEndian(chunk.header + kChunkSizeOffset, 8) : 0;
    if (read.ok() &&
        (memcmp(chunk.header, "FLR\0", 4) != 0 || chunk.size < kChunkHeaderSize ||
         chunk.size > source.bytes - offset || chunk.header[kChunkGenerationOffset] != 0)) {
      read = Status::InvalidArgument(path + ": offset " + std::to_string(offset) +
                                     ": not a finished chunk, not compacted");
    }
    if (!read.ok()) {
      close(fd);
      return read;
    }
    foldable = foldable || (offset != 0 && !Contains(options.chunk_starts, offset));
    chunks.push_back(chunk);
    offset += chunk.size;
  }
  if (!foldable) {
    close(fd);
    return Status();
  }

  const std::string temporary = path + ".compacting";
  JfrFile out;
  Status status = out.Open(temporary);
  for (size_t first = 0; first < chunks.size() && status.ok();) {
    size_t last = first + 1;
    while (last < chunks.size() && !Contains(options.chunk_starts, chunks[last].offset)) last++;
    status = AppendFolded(source, chunks, first, last, first == 0 && last == chunks.size(), options,
                          &out);
    first = last;
  }
  close(fd);
  if (status.ok()) status = out.Close();
  if (status.ok() && rename(temporary.c_str(), path.c_str()) != 0) {
    const int os_error = errno;
    status = Status::Io("cannot rename " + temporary + " to " + path + ": " + strerror(os_error),
                        os_error);
  }
  if (!status.ok()) {
    out.Close();
    unlink(temporary.c_str());  // best effort: the failure above is the one to report
  }
  return status;
}

}  // namespace ctxprof
