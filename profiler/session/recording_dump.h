// Dumps: what `dump` writes as JFR (Profiler::Dump), without stopping anything.
//
//  * A session with a healthy recording (file= or repository=) dumps that recording. Its
//    background thread publishes everything consumed so far (Session::PublishRecording: in file
//    mode the chunk ends, in repository mode the chunk file is finished) and opens the published
//    files; CopyRecording then copies those bytes — finished chunks the writer never changes
//    again — into the dump file (profiler/jfr/jfr_copy.h: the copy's last chunk gets the final
//    flag), and folds them into one chunk (CompactRecordingFile). The copy runs on the calling
//    thread, outside the profiler's lock and off the background thread, so sampling and draining go
//    on while a large recording is copied.
//  * Without a recording (or after it failed, or before it published anything), the aggregated
//    samples are written through a JfrWriter (WriteAggregateJfr): every aggregated stack with its
//    kind, thread state, context and count, frames typed and named as in a recording. What
//    aggregation does not keep is not in it: samples carry one thread ("[all threads]") and
//    made-up times, 1 µs apart, ending at the dump and grouped by context, so that each context
//    is one interval that covers exactly its samples.
//
// Thread safety: both functions run on the dumping thread; the aggregator is thread-safe.
#ifndef CTXPROF_PROFILER_SESSION_RECORDING_DUMP_H_
#define CTXPROF_PROFILER_SESSION_RECORDING_DUMP_H_

#include <memory>
#include <string>
#include <vector>

#include "context/attribute_registry.h"
#include "context/dictionary.h"
#include "profiler/base/status.h"
#include "profiler/jfr/jfr_chunk_writer.h"
#include "profiler/jfr_events/frame_resolver.h"
#include "profiler/sampler/clock.h"
#include "profiler/session/aggregator.h"

namespace ctxprof {

// Published recording files, opened for reading (fd owned: closed by the destructor).
class PublishedFiles {
 public:
  PublishedFiles() = default;
  ~PublishedFiles();
  PublishedFiles(const PublishedFiles&) = delete;
  PublishedFiles& operator=(const PublishedFiles&) = delete;

  // Opens `published`. kIo naming the file when one cannot be opened.
  Status Open(const std::vector<JfrChunkWriter::Published>& published);
  uint64_t bytes() const;

 private:
  friend Status CopyRecording(const PublishedFiles& files, const std::string& path, bool fold);
  struct File {
    std::string path;
    int fd;
    uint64_t bytes;
  };
  std::vector<File> files_;
};

// Copies the published files into `path`, as one chunk (`fold`), or as the chunks they hold
// (with jfrsync= and repository=, the JDK's chunks follow each of ctxprof's and cannot be
// folded into them). kIo naming the path on failure.
Status CopyRecording(const PublishedFiles& files, const std::string& path, bool fold = true);

// What WriteAggregateJfr needs besides the aggregator; every pointer must stay valid during it.
struct AggregateDumpInputs {
  const Clock* clock = nullptr;
  FrameResolver* frames = nullptr;  // names Java and native frames
  const Dictionary* dictionary = nullptr;
  const AttributeRegistry* attributes = nullptr;
};

// Writes `aggregator`'s samples as a JFR recording at `path`. kIo naming the path on failure.
Status WriteAggregateJfr(Aggregator* aggregator, const AggregateDumpInputs& inputs,
                         const std::string& path);

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SESSION_RECORDING_DUMP_H_
