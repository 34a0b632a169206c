#include "profiler/jfr/jfr_copy.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unordered_map>
#include <vector>

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
  for (int i = 7; i >= 0; i--, value >>= 8) out[i] = static_cast<unsigned char>(value);
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

}  // namespace ctxprof
