#include "profiler/jfr/jfr_chunk_writer.h"

#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "profiler/jfr/jfr_chunk_header.h"

namespace ctxprof {
namespace {

constexpr uint8_t kCheckpointFlush = 1;
constexpr uint64_t kCheckpointRecordType = 1;

void PutU64At(uint8_t* out, uint64_t value) {
  for (int i = 0; i < 8; i++) out[i] = static_cast<uint8_t>(value >> (56 - 8 * i));
}

struct ChunkHeader {
  uint64_t size = kChunkHeaderSize;
  uint64_t checkpoint_offset = 0;
  uint64_t metadata_offset = 0;
  int64_t start_nanos = 0;
  uint64_t duration_nanos = 0;
  uint64_t start_ticks = 0;
  uint64_t ticks_per_second = 0;
  uint8_t generation = 1;
  uint16_t flags = kChunkFlagCompressedInts;

  void Encode(uint8_t out[kChunkHeaderSize]) const {
    memcpy(out, "FLR\0", 4);
    out[4] = 0;
    out[5] = 2;  // major version
    out[6] = 0;
    out[7] = 1;  // minor version
    PutU64At(out + 8, size);
    PutU64At(out + 16, checkpoint_offset);
    PutU64At(out + 24, metadata_offset);
    PutU64At(out + 32, static_cast<uint64_t>(start_nanos));
    PutU64At(out + 40, duration_nanos);
    PutU64At(out + 48, start_ticks);
    PutU64At(out + 56, ticks_per_second);
    out[64] = generation;
    out[65] = 0;
    out[66] = static_cast<uint8_t>(flags >> 8);
    out[67] = static_cast<uint8_t>(flags);
  }
};

}  // namespace

JfrChunkWriter::JfrChunkWriter(const JfrChunkConfig& config, const JfrClock* clock)
    : config_(config), clock_(clock) {}

StatusOr<std::unique_ptr<JfrChunkWriter>> JfrChunkWriter::Open(const JfrChunkConfig& config,
                                                               const JfrClock* clock) {
  if (config.path.empty() == config.repository.empty()) {
    return Status::InvalidArgument(
        "JFR writer: set exactly one of path (one file) and repository (a folder)");
  }
  if (clock->TicksPerSecond() == 0) {
    return Status::InvalidArgument("JFR writer: the clock reports 0 ticks/s");
  }
  std::unique_ptr<JfrChunkWriter> writer(new JfrChunkWriter(config, clock));
  if (!config.repository.empty()) {
    if (::mkdir(config.repository.c_str(), 0700) != 0 && errno != EEXIST) {
      const int os_error = errno;
      return Status::Io(
          "cannot create repository folder " + config.repository + ": " + strerror(os_error),
          os_error);
    }
    struct stat st;
    if (::stat(config.repository.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return Status::Io("repository " + config.repository + " is not a folder: choose another path",
                        ENOTDIR);
    }
    if (::chmod(config.repository.c_str(), 0700) != 0) {
      const int os_error = errno;
      return Status::Io("cannot set mode 0700 on repository folder " + config.repository + ": " +
                            strerror(os_error),
                        os_error);
    }
    // Continue after the chunk files an earlier session left, never overwriting them.
    DIR* dir = ::opendir(config.repository.c_str());
    if (dir == nullptr) {
      const int os_error = errno;
      return Status::Io(
          "cannot list repository folder " + config.repository + ": " + strerror(os_error),
          os_error);
    }
    while (const dirent* entry = ::readdir(dir)) {
      unsigned sequence;
      char end;
      if (sscanf(entry->d_name, "ctxprof-%u.jf%c", &sequence, &end) == 2 && end == 'r') {
        writer->repository_sequence_ = std::max(writer->repository_sequence_, sequence);
      }
    }
    ::closedir(dir);
  }
  writer->file_start_ticks_ = clock->Now();
  writer->file_start_nanos_ = clock->EpochNanosAt(writer->file_start_ticks_);
  writer->ticks_per_nano_ = static_cast<double>(clock->TicksPerSecond()) / 1e9;
  auto nanos_to_ticks = [clock](uint64_t nanos) {
    return static_cast<uint64_t>(static_cast<long double>(nanos) * clock->TicksPerSecond() / 1e9L);
  };
  writer->flush_interval_ticks_ = nanos_to_ticks(config.flush_interval_nanos);
  writer->chunk_time_ticks_ = nanos_to_ticks(config.chunk_time_nanos);
  writer->out_.Reserve(config.write_buffer_bytes + 4096);
  return writer;
}

Status JfrChunkWriter::BeginChunk() {
  chunk_number_++;
  if (!config_.repository.empty()) {
    char name[32];
    snprintf(name, sizeof(name), "/ctxprof-%06u.jfr", ++repository_sequence_);
    if (Status opened = file_.Open(config_.repository + name); !opened.ok()) return opened;
    chunk_offset_ = 0;
  } else if (chunk_number_ == 1) {
    if (Status opened = file_.Open(config_.path); !opened.ok()) return opened;
    chunk_offset_ = 0;
  } else {
    chunk_offset_ = file_.size();
  }
  const bool continues = continue_next_ && config_.repository.empty();
  continue_next_ = false;
  if (!continues) {
    continued_offset_ = chunk_offset_;
    if (config_.repository.empty()) chunk_starts_.push_back(chunk_offset_);
  }

  uint64_t start_ticks = file_start_ticks_;
  if (chunk_number_ > 1) {
    start_ticks = std::max(clock_->Now(), previous_chunk_end_ticks_);
    const uint64_t one_nano = static_cast<uint64_t>(std::ceil(ticks_per_nano_));
    while (clock_->EpochNanosAt(start_ticks) < previous_chunk_end_nanos_ ||
           clock_->EpochNanosAt(start_ticks) <= chunk_start_nanos_) {
      start_ticks += one_nano;
    }
  }
  chunk_start_ticks_ = start_ticks;
  chunk_start_nanos_ = clock_->EpochNanosAt(start_ticks);
  max_ticks_ = start_ticks;
  metadata_offset_ = 0;
  last_checkpoint_offset_ = 0;
  generation_ = 1;
  next_flush_ticks_ = chunk_start_ticks_ + flush_interval_ticks_;
  if (!continues) {
    chunk_end_ticks_ = chunk_time_ticks_ == 0 ? 0 : chunk_start_ticks_ + chunk_time_ticks_;
  }

  ChunkHeader header;
  header.start_nanos = chunk_start_nanos_;
  header.start_ticks = chunk_start_ticks_;
  header.ticks_per_second = clock_->TicksPerSecond();
  uint8_t bytes[kChunkHeaderSize];
  header.Encode(bytes);
  out_.clear();
  out_.PutBytes(bytes, kChunkHeaderSize);
  return Status();
}

Status JfrChunkWriter::Write() {
  if (publishes_whole_chunks() || out_.size() == 0) return Status();
  Status appended = file_.Append(out_.data(), out_.size());
  if (appended.ok()) out_.clear();
  return appended;
}

JfrChunkWriter::Checkpoint JfrChunkWriter::BeginCheckpoint() {
  Checkpoint checkpoint{out_.size(), 0, position()};
  checkpoint.size_at = out_.ReservePaddedVarint();
  out_.PutVarint(kCheckpointRecordType);
  out_.PutVarint(max_ticks_);
  out_.PutVarint(0);  // duration
  // Backwards chain: the distance to the previous checkpoint, 0 for the first one.
  out_.PutVarint(last_checkpoint_offset_ == 0
                     ? 0
                     : static_cast<uint64_t>(static_cast<int64_t>(last_checkpoint_offset_) -
                                             static_cast<int64_t>(checkpoint.offset)));
  out_.PutByte(kCheckpointFlush);
  return checkpoint;
}

void JfrChunkWriter::EndCheckpoint(const Checkpoint& checkpoint) {
  out_.PatchVarint(checkpoint.size_at, out_.size() - checkpoint.start);
  last_checkpoint_offset_ = checkpoint.offset;
}

void JfrChunkWriter::EncodeHeader(uint64_t size, uint8_t generation, bool final_chunk,
                                  uint8_t* out) {
  const uint64_t end_ticks = std::max(clock_->Now(), max_ticks_);
  ChunkHeader header;
  header.size = size;
  header.checkpoint_offset = last_checkpoint_offset_;
  header.metadata_offset = metadata_offset_;
  header.start_nanos = chunk_start_nanos_;
  header.duration_nanos =
      static_cast<uint64_t>(clock_->EpochNanosAt(end_ticks) - chunk_start_nanos_);
  previous_chunk_end_ticks_ = end_ticks;
  previous_chunk_end_nanos_ = chunk_start_nanos_ + static_cast<int64_t>(header.duration_nanos);
  header.start_ticks = chunk_start_ticks_;
  header.ticks_per_second = clock_->TicksPerSecond();
  header.generation = generation;
  header.flags = kChunkFlagCompressedInts | (final_chunk ? kChunkFlagFinal : 0);
  header.Encode(out);
}

Status JfrChunkWriter::PatchHeader(uint8_t generation, bool final_chunk) {
  uint8_t bytes[kChunkHeaderSize];
  EncodeHeader(file_.size() - chunk_offset_, generation, final_chunk, bytes);
  // HotSpot's order: lock (255), rewrite the fields, then publish the new generation. The
  // chunk bytes the new size covers were appended before this.
  const uint8_t locked = kChunkGenerationLocked;
  Status written = file_.WriteAt(chunk_offset_ + kChunkGenerationOffset, &locked, 1);
  if (written.ok()) {
    written = file_.WriteAt(chunk_offset_ + kChunkSizeOffset, bytes + kChunkSizeOffset,
                            kChunkGenerationOffset - kChunkSizeOffset);
  }
  if (written.ok()) written = file_.WriteAt(chunk_offset_ + 66, bytes + 66, 2);
  if (written.ok()) written = file_.WriteAt(chunk_offset_ + kChunkGenerationOffset, &generation, 1);
  return written;
}

Status JfrChunkWriter::AppendWholeChunk(bool final_chunk) {
  // Locked until every byte is in the file: a reader that sees the file grow waits for
  // generation 0 instead of reading a chunk that is still being copied in.
  EncodeHeader(out_.size(), kChunkGenerationLocked, final_chunk, out_.mutable_data());
  const uint64_t previous_end = file_.size();
  const uint8_t finished = 0;
  Status appended = file_.Append(out_.data(), out_.size());
  if (appended.ok()) appended = file_.WriteAt(chunk_offset_ + kChunkGenerationOffset, &finished, 1);
  if (!appended.ok()) {
    file_.Truncate(previous_end);  // best effort: the append's error is the one to report
    return appended;
  }
  out_.clear();
  return Status();
}

Status JfrChunkWriter::CommitSegment(SegmentEnd end) {
  const bool chunk_end = end != SegmentEnd::kSegment;
  const bool final_chunk = end == SegmentEnd::kFinalChunk;
  if (publishes_whole_chunks()) {
    if (!chunk_end) {
      return Status::InvalidArgument("JFR writer: in file mode only whole chunks are published");
    }
    if (Status appended = AppendWholeChunk(final_chunk); !appended.ok()) return appended;
    continue_next_ = end == SegmentEnd::kFlush;
    if (continue_next_) return Status();
  } else {
    if (Status written = Write(); !written.ok()) return written;
    uint8_t generation = 0;
    if (!chunk_end) {
      generation_ = static_cast<uint8_t>(generation_ % 254 + 1);  // 1..254: never 0 or 255
      generation = generation_;
    }
    if (Status patched = PatchHeader(generation, final_chunk); !patched.ok()) return patched;
    if (!chunk_end) return Status();
  }
  chunks_finished_++;
  last_finished_ = FinishedChunk{file_.path(), chunk_start_nanos_, previous_chunk_end_nanos_};
  return publishes_whole_chunks() ? Status() : FinishChunkFile();
}

Status JfrChunkWriter::FinishChunkFile() {
  ChunkFile finished{file_.path(), file_.size(), clock_->EpochNanosAt(max_ticks_)};
  if (Status closed = file_.Close(); !closed.ok()) return closed;
  finished_files_bytes_ += finished.bytes;
  finished_files_.push_back(std::move(finished));
  return ApplyRetention();
}

void JfrChunkWriter::RestatLastFinished() {
  struct stat file;
  if (finished_files_.empty() || stat(finished_files_.back().path.c_str(), &file) != 0) return;
  finished_files_bytes_ += static_cast<uint64_t>(file.st_size) - finished_files_.back().bytes;
  finished_files_.back().bytes = static_cast<uint64_t>(file.st_size);
}

Status JfrChunkWriter::ApplyRetention() {
  const int64_t now_nanos = clock_->EpochNanosAt(clock_->Now());
  while (!finished_files_.empty()) {
    const ChunkFile& oldest = finished_files_.front();
    const bool too_big =
        config_.max_size_bytes != 0 && finished_files_bytes_ > config_.max_size_bytes;
    const bool too_old =
        config_.max_age_nanos != 0 &&
        oldest.end_epoch_nanos + static_cast<int64_t>(config_.max_age_nanos) < now_nanos;
    if (!too_big && !too_old) break;
    if (::unlink(oldest.path.c_str()) != 0 && errno != ENOENT) {
      const int os_error = errno;
      return Status::Io(
          "cannot delete old chunk file " + oldest.path + " (retention): " + strerror(os_error),
          os_error);
    }
    finished_files_bytes_ -= oldest.bytes;
    finished_files_.pop_front();
  }
  return Status();
}

JfrChunkWriter::Due JfrChunkWriter::DueAt(uint64_t now_ticks) {
  if (chunk_end_ticks_ != 0 && now_ticks >= chunk_end_ticks_) return Due::kRotate;
  if (flush_interval_ticks_ != 0 && now_ticks >= next_flush_ticks_) {
    next_flush_ticks_ = now_ticks + flush_interval_ticks_;
    return Due::kFlush;
  }
  return Due::kNothing;
}

void JfrChunkWriter::RestartDeadlines(uint64_t now_ticks) {
  if (flush_interval_ticks_ != 0) next_flush_ticks_ = now_ticks + flush_interval_ticks_;
  if (chunk_time_ticks_ != 0) chunk_end_ticks_ = now_ticks + chunk_time_ticks_;
}

bool JfrChunkWriter::Full(uint64_t pending_bytes) const {
  return config_.chunk_size_bytes != 0 &&
         file_.size() + out_.size() - continued_offset_ + pending_bytes >= config_.chunk_size_bytes;
}

Status JfrChunkWriter::Close() { return file_.is_open() ? file_.Close() : Status(); }

std::vector<JfrChunkWriter::Published> JfrChunkWriter::published() const {
  if (publishes_whole_chunks()) return {Published{config_.path, file_.size()}};
  std::vector<Published> files;
  for (const ChunkFile& file : finished_files_) files.push_back(Published{file.path, file.bytes});
  return files;
}

std::vector<std::string> JfrChunkWriter::finished_chunk_files() const {
  std::vector<std::string> paths;
  for (const ChunkFile& file : finished_files_) paths.push_back(file.path);
  return paths;
}

uint64_t JfrChunkWriter::TicksJustAfter(uint64_t ticks) const {
  // The JDK's conversion (jdk.jfr.internal.consumer.TimeConverter) with the first chunk's
  // header, which JDK 25 uses for every chunk: nanos = start + (long)((ticks - startTicks) / d).
  auto to_nanos = [this](uint64_t t) {
    return static_cast<int64_t>(static_cast<double>(static_cast<int64_t>(t - file_start_ticks_)) /
                                ticks_per_nano_);
  };
  const int64_t needed = to_nanos(ticks) + 2;
  uint64_t after = ticks + 1;  // a few steps: 2 ns are a few ticks
  while (to_nanos(after) < needed) after++;
  return after;
}

}  // namespace ctxprof
