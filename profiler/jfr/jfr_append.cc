#include "profiler/jfr/jfr_append.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "profiler/jfr/jfr_chunk_header.h"
#include "profiler/jfr/jfr_copy.h"
#include "profiler/jfr/jfr_reader.h"

namespace ctxprof {
namespace {

Status OpenForCopy(const std::string& path, JfrCopySource* source) {
  source->name = path;
  source->fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat file;
  if (source->fd < 0 || fstat(source->fd, &file) != 0) {
    const int os_error = errno;
    return Status::Io("cannot open " + path + ": " + strerror(os_error), os_error);
  }
  source->bytes = static_cast<uint64_t>(file.st_size);
  return Status();
}

// Writes `path` anew (through path.tmp, renamed over it, so `path` is whole at every moment)
// from `sources`, whose files it opens and closes. kIo naming the file at fault.
Status Rewrite(const std::string& path, std::vector<JfrCopySource> sources) {
  Status copied;
  for (JfrCopySource& source : sources) {
    if (copied.ok()) copied = OpenForCopy(source.name, &source);
  }
  const std::string joined = path + ".tmp";
  if (copied.ok()) copied = CopyChunks(sources, joined);
  if (copied.ok() && rename(joined.c_str(), path.c_str()) != 0) {
    const int os_error = errno;
    copied =
        Status::Io("cannot rename " + joined + " to " + path + ": " + strerror(os_error), os_error);
  }
  for (const JfrCopySource& source : sources) {
    if (source.fd >= 0) close(source.fd);
  }
  if (!copied.ok()) unlink(joined.c_str());
  return copied;
}

// Appends the bytes [offset, offset + size) of `fd` (the file `path`) to *bytes.
Status ReadRange(int fd, const std::string& path, uint64_t offset, uint64_t size,
                 std::vector<uint8_t>* bytes) {
  const size_t at = bytes->size();
  bytes->resize(at + size);
  for (uint64_t done = 0; done < size;) {
    const ssize_t n =
        pread(fd, bytes->data() + at + done, size - done, static_cast<off_t>(offset + done));
    if (n <= 0) {
      const int os_error = n < 0 ? errno : 0;
      return Status::Io("cannot read " + path + " at offset " + std::to_string(offset + done) +
                            ": " + (n < 0 ? strerror(os_error) : "unexpected end of file"),
                        os_error);
    }
    done += static_cast<uint64_t>(n);
  }
  return Status();
}

// Calls `visit` with each chunk of `path`, one at a time (its bytes and
// its offset in the file), so that memory holds one chunk, never the file.
Status ForEachChunk(const std::string& path,
                    const std::function<Status(std::vector<uint8_t>, uint64_t)>& visit) {
  JfrCopySource file{path, -1, 0, {}};
  if (Status opened = OpenForCopy(path, &file); !opened.ok()) {
    if (file.fd >= 0) close(file.fd);
    return opened;
  }
  Status status;
  for (uint64_t offset = 0; status.ok() && offset < file.bytes;) {
    std::vector<uint8_t> header;
    status = ReadRange(file.fd, path, offset, kChunkHeaderSize, &header);
    uint64_t size = 0;
    for (size_t i = 0; status.ok() && i < 8; i++) size = size << 8 | header[kChunkSizeOffset + i];
    if (status.ok() && (size < kChunkHeaderSize || size > file.bytes - offset)) {
      status = Status::InvalidArgument(path + ": offset " + std::to_string(offset) +
                                       ": chunk size " + std::to_string(size) + " is invalid");
    }
    std::vector<uint8_t> chunk;
    if (status.ok()) status = ReadRange(file.fd, path, offset, size, &chunk);
    if (status.ok()) status = visit(std::move(chunk), offset);
    offset += size;
  }
  close(file.fd);
  return status;
}

// What the joined file `path` leaves out, as file offsets of records, ascending: with
// `thresholds` (select=if-context) the JDK's events (those at or after `jdk_from`) shorter than
// their type's threshold that fall in no span of their thread; with `triggered`
// (contexts=triggered) the spans (ctxprof.Context) in which no event that stays falls. An event
// falls in a span when its thread's osThreadId is the span's and its start lies in [start,
// end): JfrReader::ContextAt, the readers' own join. Both sides count the JDK's ticks, so the
// comparison is exact. It streams: the spans are read from the session's chunks (before
// `jdk_from`) and kept; then every chunk is read one at a time and each of its events judged and
// forgotten, so memory holds the spans, one chunk and the offsets left out.
StatusOr<std::vector<uint64_t>> RecordsLeftOut(const std::string& path, uint64_t jdk_from,
                                               const AppendSelection& selection) {
  const std::map<std::string, uint64_t>& thresholds = selection.thresholds;
  JfrReader spans;
  JfrReader::Options options;
  options.leading_fields = 3;  // startTime, duration, eventThread (or startTime, thread)
  options.on_event = [](const JfrEvent& event) { return event.type_name() == "ctxprof.Context"; };
  std::vector<uint8_t> ours;
  JfrCopySource file{path, -1, 0, {}};
  Status read = OpenForCopy(path, &file);
  if (read.ok()) read = ReadRange(file.fd, path, 0, jdk_from, &ours);
  if (file.fd >= 0) close(file.fd);
  if (read.ok()) read = spans.Parse(path, std::move(ours), options);
  if (!read.ok()) return read;
  std::vector<uint64_t> drop;
  std::unordered_set<const JfrEvent*> spans_with_events;
  uint64_t chunk_offset = 0;
  options.on_event = [&](const JfrEvent& event) {
    if (event.type_name() == "ctxprof.Context") return false;
    const uint64_t file_offset = chunk_offset + event.file_offset;
    const JfrValue& thread = event.thread();
    const JfrEvent* span = thread.is_null()
                               ? nullptr
                               : spans.ContextAt(JfrReader::ThreadKey(thread), event.start_ticks());
    if (span != nullptr) {
      spans_with_events.insert(span);
      return false;
    }
    const auto threshold = thresholds.find(event.type_name());
    const JfrValue& duration = event.Field("duration");
    if (file_offset >= jdk_from && threshold != thresholds.end() && !duration.is_null() &&
        static_cast<uint64_t>(std::max<int64_t>(0, spans.NanosOf(duration.integer()))) <
            threshold->second) {
      drop.push_back(file_offset);
    }
    return false;
  };
  read = ForEachChunk(path, [&](std::vector<uint8_t> chunk, uint64_t at) {
    chunk_offset = at;
    JfrReader events;
    return events.Parse(path + " (the chunk at offset " + std::to_string(at) + ")",
                        std::move(chunk), options);
  });
  if (!read.ok()) return read;
  if (selection.triggered) {
    for (const JfrEvent& span : spans.events()) {
      if (spans_with_events.count(&span) == 0) drop.push_back(span.file_offset);
    }
  }
  std::sort(drop.begin(), drop.end());
  return drop;
}

}  // namespace

Status AppendRecording(const std::string& path, const std::vector<std::string>& others,
                       const AppendSelection& selection) {
  struct stat ours;
  if (stat(path.c_str(), &ours) != 0) {
    const int os_error = errno;
    return Status::Io("cannot open " + path + ": " + strerror(os_error), os_error);
  }
  std::vector<JfrCopySource> sources{JfrCopySource{path, -1, 0, {}}};
  for (const std::string& other : others) sources.push_back(JfrCopySource{other, -1, 0, {}});
  Status copied = Rewrite(path, std::move(sources));
  if (!copied.ok() || (selection.thresholds.empty() && !selection.triggered)) return copied;
  StatusOr<std::vector<uint64_t>> drop =
      RecordsLeftOut(path, static_cast<uint64_t>(ours.st_size), selection);
  if (!drop.ok()) return drop.status();
  if (drop.value().empty()) return Status();
  return Rewrite(path, {JfrCopySource{path, -1, 0, std::move(drop.value())}});
}

}  // namespace ctxprof
