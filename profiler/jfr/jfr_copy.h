// CopyChunks: a new recording file made of finished chunks taken from other files, for a dump of
// a recording that goes on being written (profiler/session/recording_dump.h).
// CompactChunks: a file of several finished chunks rewritten as one chunk (below).
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
// Thread safety: none needed; reads only the given ranges, which the writer never changes again;
// CompactChunks' caller must not write the file meanwhile.
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

// Rewrites the recording `path`, made of finished chunks, folding each run of chunks that
// continue one another into one chunk, as if it had been written in one go: a file= recording
// appends a whole chunk per flush so that every reader reads it while it grows (docs/JFR.md), and
// each repeats the metadata and the pool entries its events use. A run starts at offset 0 and at
// each offset in `chunk_starts` (empty: the whole file is one run). Its chunk: the run's first
// start and clock, a duration to its last end, its last flags; the first metadata record; every
// event record in file order, except the types in `first_chunk_only` (kept from the run's first
// chunk only) and `last_chunk_only` (from its last only); one checkpoint with every pool entry
// once (the first one of its type and key). Requires what ctxprof recordings guarantee: chunks
// finished, with the same metadata id within a run, and a (pool type, key) pair that means one
// value in the whole file (JFR's cross-chunk key rule). Crash-safe: written to
// `path`.compacting, then renamed over `path`, so `path` is at every moment the old file or the
// new one (a reader that opened the old one keeps it). A file with nothing to fold, and anything
// but a regular file with one link (a FIFO, a device), is left as it is. Memory: one input chunk
// and one run's distinct pool entries. Fails with Status::Io (a file call, with the OS error) or
// kInvalidArgument (input that does not meet the requirements, naming the offset); `path` is
// then unchanged.
//
// When the whole file folds into one chunk (a file that already is one chunk is left as it is),
// its pools are also packed, the events left as they are: the keys of the pool types in
// `renumber_by_use` that no event type of the file refers to (e.g. methods, classes, packages,
// symbols: only other pool entries refer to them) become 1, 2, ... by how many pool entries refer
// to each, most first, so that the most used take 1-byte varints in the entries that refer to them
// (stack frames refer to methods); an entry nothing refers to is left out; a key referred to
// without an entry (0 for none) keeps its meaning. What every entry says is unchanged.
struct JfrCompactOptions {
  std::vector<uint64_t> chunk_starts;      // file offsets where a run starts
  std::vector<uint64_t> first_chunk_only;  // event types: per-chunk settings
  std::vector<uint64_t> last_chunk_only;   // event types: totals since the start
  std::vector<uint64_t> renumber_by_use;   // pool types
};
Status CompactChunks(const std::string& path, const JfrCompactOptions& options);

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_JFR_JFR_COPY_H_
