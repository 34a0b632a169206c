#include "profiler/jfr/jfr_copy.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
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
