#include "profiler/jfr/jfr_append.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unordered_set>
#include <utility>
#include <vector>

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

// What the joined file `path` leaves out, as file offsets of records, ascending: with
// `thresholds` (select=if-context) the JDK's events (those at or after `jdk_from`) shorter than
// their type's threshold that fall in no span of their thread; with `triggered`
// (contexts=triggered) the spans (ctxprof.Context) in which no event that stays falls. An event
// falls in a span when its thread's osThreadId is the span's and its start lies in [start,
// end): JfrReader::ContextAt, the readers' own join. Both sides count the JDK's ticks, so the
// comparison is exact.
StatusOr<std::vector<uint64_t>> RecordsLeftOut(const std::string& path, uint64_t jdk_from,
                                               const AppendSelection& selection) {
  const std::map<std::string, uint64_t>& thresholds = selection.thresholds;
  JfrReader reader;
  JfrReader::Options options;
  options.leading_fields = 3;  // startTime, duration, eventThread (or startTime, thread)
  if (Status read = reader.Read(path, options); !read.ok()) return read;
  std::vector<uint64_t> drop;
  std::unordered_set<const JfrEvent*> spans_with_events;
  for (const JfrEvent& event : reader.events()) {
    if (event.type_name() == "ctxprof.Context") continue;
    const JfrValue& thread = event.thread();
    const JfrEvent* span =
        thread.is_null() ? nullptr
                         : reader.ContextAt(JfrReader::ThreadKey(thread), event.start_ticks());
    if (span != nullptr) {
      spans_with_events.insert(span);
      continue;
    }
    const auto threshold = thresholds.find(event.type_name());
    const JfrValue& duration = event.Field("duration");
    if (event.file_offset >= jdk_from && threshold != thresholds.end() && !duration.is_null() &&
        static_cast<uint64_t>(std::max<int64_t>(0, reader.NanosOf(duration.integer()))) <
            threshold->second) {
      drop.push_back(event.file_offset);
    }
  }
  if (selection.triggered) {
    for (const JfrEvent& event : reader.events()) {
      if (event.file_offset < jdk_from && event.type_name() == "ctxprof.Context" &&
          spans_with_events.count(&event) == 0) {
        drop.push_back(event.file_offset);
      }
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
