// CopyChunks: a new recording file made of finished chunks taken from other files, for a dump of
// a recording that goes on being written (profiler/session/recording_dump.h).
//
// Each source is a byte range [0, bytes) of an open file that holds whole, finished chunks (the
// published part of a file= recording, or finished chunk files of a repository=). The copy is
// checked chunk by chunk while it is written — magic, a size that stays within the source,
// generation 0 — and the last chunk of the copy gets the final flag, so that readers treat the
// copy as a finished recording, not one whose writer is still at work.
//
// A source may also name event records to leave out (select=if-context of the JDK's events with
// jfrsync=, jni/jfr_sync.h): a chunk holding one is rewritten in memory without them, its header's
// size, constant-pool and metadata offsets and its checkpoints' deltas moved to match (each
// checkpoint is re-encoded with a 4-byte padded size and a full-width delta, as HotSpot may write
// them). Only records of event types (id > 1) of chunks with compressed integers are left out.
//
// Thread safety: none needed; reads only the given ranges, which the writer never changes again.
#ifndef CTXPROF_PROFILER_JFR_JFR_COPY_H_
#define CTXPROF_PROFILER_JFR_JFR_COPY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/base/status.h"

namespace ctxprof {

struct JfrCopySource {
  std::string name;  // for messages
  int fd;            // open for reading; the caller keeps and closes it
  uint64_t bytes;    // whole chunks from offset 0
  // File offsets of event records to leave out, ascending (empty: copy every record).
  std::vector<uint64_t> drop;
};

// Writes the chunks of `sources`, in order, to a new file `path` (mode 0600, truncated if it
// exists). Fails with Status::Io naming the path (write errors, with the OS error) or the source
// and offset (a read error, a range that is not whole finished chunks, or a chunk with records
// to leave out whose records cannot be walked). No sources, or only
// empty ones, is an error too: a JFR file holds at least one chunk.
Status CopyChunks(const std::vector<JfrCopySource>& sources, const std::string& path);

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_JFR_JFR_COPY_H_
