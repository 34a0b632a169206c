// JfrChunkWriter: the life of JFR chunks on disk — where they go, their headers, when they are
// flushed and rotated, and which finished chunk files are kept. It knows the chunk format (the
// 68-byte header, the generation protocol, the checkpoint chain) but not what the events mean:
// the layer above appends records to out() and decides what goes into each checkpoint.
//
// A chunk, in file order:
//   68-byte header
//   whatever the caller appends: metadata (after MarkMetadata()), events, checkpoints
// A finished chunk's generation (byte 64) is 0; a recording's last chunk also has the final flag.
//
// Repository mode: each chunk is its own file `<repository>/ctxprof-<sequence>.jfr` (mode 0600,
// folder 0700; the sequence continues after files an earlier session left there, which are never
// overwritten nor deleted), and this recording's finished chunk files are deleted oldest first to
// respect max_size_bytes and max_age_nanos. The chunk in progress is streamed: its header is
// written first with generation 1 and size 68 ("unfinished" to every reader), its bytes reach the
// file as out() fills, and after each segment (CommitSegment) the header is patched in place with
// HotSpot's generation protocol: byte 64 = 255 (locked), the other fields, then byte 64 = the
// next generation (1..254). The JDK's EventStream.openRepository follows it live; like the JDK's
// own repository files, JDK 25's non-streaming readers (RecordingFile, `jfr`) refuse a chunk file
// until it is finished.
//
// File mode: every chunk goes to one file, and only whole chunks do. A chunk stays in memory
// (out()) until it ends, then is appended at once with its header locked (generation 255) until
// every byte is in the file, then generation 0. The caller ends the chunk at each flush
// (SegmentEnd::kFlush), so a reader always finds finished chunks and reads the file while it
// grows (docs/JFR.md, "Flush, streaming, crash safety, errors"); the next chunk continues it:
// chunk_size and chunk_time count from the chunk the flushes continue, and CompactChunks
// (jfr_copy.h) later folds each such run into one (chunk_starts()). BufferFull() bounds the
// in-memory part at write_buffer_bytes. A failed append is cut off again (ftruncate), so after a
// write error the file still ends with the last whole chunk.
//
// Time: the caller's JfrClock. A chunk starts where the previous one ended or later, and strictly
// after the previous chunk's start: the JDK's repository stream looks for the next chunk at or
// after start + duration of the current one, and JMC drops chunks with equal start times.
//
// Failure: every method that writes returns a Status naming the file, with the OS error; the
// caller stops using the writer after the first failure (the chunk being written keeps a
// header that says "unfinished"; chunks finished before stay valid).
//
// Thread safety: NOT thread-safe. One thread creates the writer and makes every call.
#ifndef CTXPROF_PROFILER_JFR_JFR_CHUNK_WRITER_H_
#define CTXPROF_PROFILER_JFR_JFR_CHUNK_WRITER_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "profiler/base/status.h"
#include "profiler/jfr/jfr_buffer.h"
#include "profiler/jfr/jfr_file.h"

namespace ctxprof {

// The recording's time base, in ticks (implemented above the leaf by the profiler's clock).
class JfrClock {
 public:
  virtual ~JfrClock() = default;
  virtual uint64_t Now() const = 0;
  virtual uint64_t TicksPerSecond() const = 0;
  // Wall time of `ticks` in nanoseconds since the Unix epoch.
  virtual int64_t EpochNanosAt(uint64_t ticks) const = 0;
};

struct JfrChunkConfig {
  // Exactly one of the two: a single file that receives every chunk, or a repository folder
  // that receives one file per chunk.
  std::string path;
  std::string repository;

  uint64_t chunk_size_bytes = 0;               // 0 = no size limit
  uint64_t chunk_time_nanos = 0;               // 0 = no time limit
  uint64_t flush_interval_nanos = 1000000000;  // 0 = flush only at chunk end
  uint64_t max_size_bytes = 0;          // repository mode: total of finished chunk files; 0 = none
  uint64_t max_age_nanos = 0;           // repository mode: age of a finished chunk's end; 0 = none
  size_t write_buffer_bytes = 1 << 20;  // out() is appended to the file in blocks this large
};

class JfrChunkWriter {
 public:
  // What is due at a given time (DueAt).
  enum class Due { kNothing, kFlush, kRotate };

  // Validates `config` and creates the repository folder (0700) if needed; the first chunk is
  // opened by BeginChunk. `clock` must outlive the writer. Fails with kInvalidArgument for a bad
  // config, kIo with the errno of the failed folder call.
  static StatusOr<std::unique_ptr<JfrChunkWriter>> Open(const JfrChunkConfig& config,
                                                        const JfrClock* clock);
  JfrChunkWriter(const JfrChunkWriter&) = delete;
  JfrChunkWriter& operator=(const JfrChunkWriter&) = delete;

  // Opens the next chunk (a new file in repository mode) and puts its header into out().
  Status BeginChunk();
  // The chunk-relative offset of the next byte appended to out() becomes the metadata offset.
  void MarkMetadata() { metadata_offset_ = position(); }
  // Where records go: bytes not yet in the file, which continue the current chunk.
  JfrBuffer& out() { return out_; }
  // True in file mode: a chunk is published whole when it ends, never a segment of it.
  bool publishes_whole_chunks() const { return config_.repository.empty(); }
  // Repository mode: appends out() to the file now, or once it holds write_buffer_bytes or more.
  // File mode: nothing (the chunk is appended when it ends).
  Status Write();
  Status WriteIfFull() { return out_.size() < config_.write_buffer_bytes ? Status() : Write(); }
  // Extends the chunk's duration to cover an event at `ticks`.
  void NoteEventTicks(uint64_t ticks) {
    if (ticks > max_ticks_) max_ticks_ = ticks;
  }

  // A checkpoint record with the flush flag: BeginCheckpoint appends its header (size to be
  // patched, type 1, start = the latest event tick, duration 0, the backwards offset to the
  // previous checkpoint) and the caller appends the pool count and the pools;
  // EndCheckpoint patches the size and makes it the chunk's last checkpoint.
  struct Checkpoint {
    size_t start;     // in out()
    size_t size_at;   // in out()
    uint64_t offset;  // chunk-relative
  };
  Checkpoint BeginCheckpoint();
  void EndCheckpoint(const Checkpoint& checkpoint);
  // True until the chunk's first checkpoint (which must carry the static pools).
  bool first_checkpoint_pending() const { return last_checkpoint_offset_ == 0; }

  // How a segment ends.
  enum class SegmentEnd {
    kSegment,     // repository mode: the chunk goes on
    kFlush,       // file mode: the chunk ends, and the next one continues it (file comment)
    kChunk,       // the chunk ends
    kFinalChunk,  // the chunk ends the recording (final flag)
  };
  // Publishes what was appended: after it a reader sees everything appended so far. Repository
  // mode: appends out() to the file and republishes the header; a chunk end finishes the chunk
  // (generation 0), closes its file and applies retention. File mode: the segment must end the
  // chunk; the whole chunk is appended, finished.
  Status CommitSegment(SegmentEnd end);

  // Rotation and flush deadlines, from chunk_time_nanos and flush_interval_nanos. kFlush also
  // schedules the next flush one interval after `now_ticks`.
  Due DueAt(uint64_t now_ticks);
  // Starts both deadlines over from `now_ticks` (a chunk with nothing to publish stays open).
  void RestartDeadlines(uint64_t now_ticks);
  // True when the chunk (in file mode with the chunks it continues) plus `pending_bytes` (what
  // the next checkpoint will add) reaches chunk_size_bytes.
  bool Full(uint64_t pending_bytes) const;
  // File mode: true when the chunk held in memory plus `pending_bytes` reaches
  // write_buffer_bytes (the caller then ends it with kFlush).
  bool BufferFull(uint64_t pending_bytes) const {
    return publishes_whole_chunks() && out_.size() + pending_bytes >= config_.write_buffer_bytes;
  }
  // Repository mode: deletes finished chunk files beyond max_size_bytes / max_age_nanos.
  Status ApplyRetention();
  // Repository mode: the last finished chunk file was rewritten longer (jfrsync= appends the
  // JDK's chunks to it): published() and retention take its size anew (a stat).
  void RestatLastFinished();
  // Closes the current file (after a failure too); reports a close() error.
  Status Close();

  // File mode: the offsets of the chunks that continue no other one (the first is 0).
  const std::vector<uint64_t>& chunk_starts() const { return chunk_starts_; }
  // Between chunks: the next chunk continues none, though the last ended with a flush (its
  // metadata differs, and the fold keeps one metadata per run).
  void ContinueNone() { continue_next_ = false; }
  uint32_t chunk_number() const { return chunk_number_; }  // 1, 2, ... (0 before the first)
  uint64_t chunk_start_ticks() const { return chunk_start_ticks_; }
  uint64_t max_ticks() const { return max_ticks_; }
  // Chunks finished, not counting those a later chunk continues (SegmentEnd::kFlush).
  uint64_t chunks_finished() const { return chunks_finished_; }
  // The chunk-relative offset of the next byte appended to out().
  uint64_t position() const { return file_.size() + out_.size() - chunk_offset_; }

  // The JDK's tick -> time conversion uses the first chunk's header (JDK 25 for every chunk).
  uint64_t file_start_ticks() const { return file_start_ticks_; }
  int64_t file_start_nanos() const { return file_start_nanos_; }
  double ticks_per_nano() const { return ticks_per_nano_; }
  // The first tick that every reader converts to at least 2 ns after `ticks`: where an interval
  // that must contain `ticks` ends, for the JDK's conversion (readers compare nanoseconds, and a
  // tick later converts to the same one at a TSC rate) and with 1 ns to spare for a reader that
  // converts with a later chunk's header, as JDK 17 and JMC do.
  uint64_t TicksJustAfter(uint64_t ticks) const;

  // Repository mode: the finished chunk files still present, oldest first.
  std::vector<std::string> finished_chunk_files() const;

  // What readers can read now, as (path, bytes from its start): file mode, the file up to its
  // last whole chunk; repository mode, the finished chunk files still present, oldest first.
  // Those bytes never change again (retention may delete a chunk file).
  struct Published {
    std::string path;
    uint64_t bytes;
  };
  std::vector<Published> published() const;

  // The chunk the last CommitSegment(chunk_end = true) finished: its file (repository mode; in
  // file mode the recording's file) and its time range as its header gives it.
  struct FinishedChunk {
    std::string path;
    int64_t start_nanos = 0;
    int64_t end_nanos = 0;
  };
  const FinishedChunk& last_finished_chunk() const { return last_finished_; }

 private:
  struct ChunkFile {
    std::string path;
    uint64_t bytes;
    int64_t end_epoch_nanos;
  };

  JfrChunkWriter(const JfrChunkConfig& config, const JfrClock* clock);
  // Encodes the chunk's header as of now for a chunk of `size` bytes, and notes its end as the
  // earliest start of the next chunk.
  void EncodeHeader(uint64_t size, uint8_t generation, bool final_chunk, uint8_t* out);
  Status PatchHeader(uint8_t generation, bool final_chunk);
  Status AppendWholeChunk(bool final_chunk);
  Status FinishChunkFile();

  const JfrChunkConfig config_;
  const JfrClock* const clock_;

  JfrFile file_;
  JfrBuffer out_;
  uint64_t chunk_offset_ = 0;  // where the chunk starts in file_
  // Where the chunk this one continues starts (chunk_offset_ when it continues none).
  uint64_t continued_offset_ = 0;
  bool continue_next_ = false;  // the last chunk ended with kFlush
  std::vector<uint64_t> chunk_starts_;
  uint32_t chunk_number_ = 0;
  uint64_t chunk_start_ticks_ = 0;
  int64_t chunk_start_nanos_ = 0;
  uint64_t max_ticks_ = 0;               // latest tick of any event in the chunk
  uint64_t metadata_offset_ = 0;         // chunk-relative
  uint64_t last_checkpoint_offset_ = 0;  // chunk-relative, 0 = none yet
  uint8_t generation_ = 1;
  // End of the chunk as last published in its header (the next chunk starts no earlier).
  uint64_t previous_chunk_end_ticks_ = 0;
  int64_t previous_chunk_end_nanos_ = 0;

  uint64_t file_start_ticks_ = 0;
  int64_t file_start_nanos_ = 0;
  double ticks_per_nano_ = 1;
  uint64_t flush_interval_ticks_ = 0;  // 0 = no periodic flush
  uint64_t chunk_time_ticks_ = 0;      // 0 = no chunk_time limit
  uint64_t next_flush_ticks_ = 0;
  uint64_t chunk_end_ticks_ = 0;  // 0 = none

  uint64_t chunks_finished_ = 0;
  FinishedChunk last_finished_;
  uint32_t repository_sequence_ = 0;
  std::deque<ChunkFile> finished_files_;
  uint64_t finished_files_bytes_ = 0;
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_JFR_JFR_CHUNK_WRITER_H_
