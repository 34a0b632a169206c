// CopyChunks: a new recording file made of finished chunks taken from other files, for a dump of
// a recording that goes on being written (profiler/session/recording_dump.h).
//
// Each source is a byte range [0, bytes) of an open file that holds whole, finished chunks (the
// published part of a file= recording, or finished chunk files of a repository=). The copy is
// checked chunk by chunk while it is written — magic, a size that stays within the source,
// generation 0 — and the last chunk of the copy gets the final flag, so that readers treat the
// copy as a finished recording, not one whose writer is still at work.
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
};

// Writes the chunks of `sources`, in order, to a new file `path` (mode 0600, truncated if it
// exists). Fails with Status::Io naming the path (write errors, with the OS error) or the source
// and offset (a read error, or a range that is not whole finished chunks). No sources, or only
// empty ones, is an error too: a JFR file holds at least one chunk.
Status CopyChunks(const std::vector<JfrCopySource>& sources, const std::string& path);

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_JFR_JFR_COPY_H_
