#include "profiler/recording/jfr_writer.h"

#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "profiler/jfr/jfr_metadata.h"

namespace ctxprof {

namespace {

constexpr size_t kHeaderSize = 68;
constexpr size_t kGenerationOffset = 64;
constexpr uint8_t kGenerationLocked = 255;
constexpr uint16_t kFlagCompressedInts = 1;
constexpr uint16_t kFlagFinalChunk = 2;
constexpr uint8_t kCheckpointFlush = 1;

void PutU64At(uint8_t* out, uint64_t value) {
  for (int i = 0; i < 8; i++) out[i] = static_cast<uint8_t>(value >> (56 - 8 * i));
}

struct ChunkHeader {
  uint64_t size = kHeaderSize;
  uint64_t checkpoint_offset = 0;
  uint64_t metadata_offset = 0;
  int64_t start_nanos = 0;
  uint64_t duration_nanos = 0;
  uint64_t start_ticks = 0;
  uint64_t ticks_per_second = 0;
  uint8_t generation = 1;
  uint16_t flags = kFlagCompressedInts;

  void Encode(uint8_t out[kHeaderSize]) const {
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

uint64_t Mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return h;
}

void PutHex(uint64_t value, int digits, char* out) {
  static const char kDigits[] = "0123456789abcdef";
  for (int i = digits - 1; i >= 0; i--) {
    out[i] = kDigits[value & 0xF];
    value >>= 4;
  }
}

// A signed 32-bit field as the JDK encodes it: the two's complement masked to 32 bits.
uint64_t IntBits(int32_t value) { return static_cast<uint32_t>(value); }

uint64_t FrameHash(uint64_t id, int32_t bci, FrameKind kind) {
  return Mix(id ^ (static_cast<uint64_t>(static_cast<uint32_t>(bci)) << 40) ^
             (static_cast<uint64_t>(kind) << 32));
}

}  // namespace

bool JfrWriter::PoolState::Mark(uint32_t key, uint32_t chunk) {
  if (key >= chunk_of_key.size()) chunk_of_key.resize(std::max<size_t>(key + 1, 2 * key), 0);
  if (chunk_of_key[key] == chunk) return false;
  chunk_of_key[key] = chunk;
  pending.push_back(key);
  return true;
}

uint32_t JfrWriter::StringTable::Intern(const std::string& value) {
  auto [it, inserted] = keys.emplace(value, static_cast<uint32_t>(values.size() + 1));
  if (inserted) values.push_back(value);
  return it->second;
}

JfrWriter::JfrWriter(const JfrWriterConfig& config, const JfrWriterInputs& inputs)
    : config_(config),
      inputs_(inputs),
      attribute_names_(inputs.attributes->names()),
      stack_table_(4096),
      frame_cache_(4096) {}

JfrWriter::~JfrWriter() {
  std::string ignored;
  Close(&ignored);
}

std::unique_ptr<JfrWriter> JfrWriter::Open(const JfrWriterConfig& config,
                                           const JfrWriterInputs& inputs, std::string* error) {
  if (config.path.empty() == config.repository.empty()) {
    *error = "JFR writer: set exactly one of path (one file) and repository (a folder)";
    return nullptr;
  }
  if (inputs.clock == nullptr || inputs.frames == nullptr || inputs.threads == nullptr ||
      inputs.dictionary == nullptr || inputs.attributes == nullptr) {
    *error =
        "JFR writer: clock, frame and thread resolvers, dictionary and attribute registry "
        "are all required";
    return nullptr;
  }
  if (inputs.clock->TicksPerSecond() == 0) {
    *error = std::string("JFR writer: clock ") + inputs.clock->Name() + " reports 0 ticks/s";
    return nullptr;
  }
  if (!config.repository.empty()) {
    if (::mkdir(config.repository.c_str(), 0700) != 0 && errno != EEXIST) {
      *error = "cannot create repository folder " + config.repository + ": " + strerror(errno);
      return nullptr;
    }
    struct stat st;
    if (::stat(config.repository.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      *error = "repository " + config.repository + " is not a folder: choose another path";
      return nullptr;
    }
    if (::chmod(config.repository.c_str(), 0700) != 0) {
      *error =
          "cannot set mode 0700 on repository folder " + config.repository + ": " + strerror(errno);
      return nullptr;
    }
  }
  std::unique_ptr<JfrWriter> writer(new JfrWriter(config, inputs));
  if (!config.repository.empty()) {
    // Continue after the chunk files an earlier session left, never overwriting them.
    DIR* dir = ::opendir(config.repository.c_str());
    if (dir == nullptr) {
      *error = "cannot list repository folder " + config.repository + ": " + strerror(errno);
      return nullptr;
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
  const Clock& clock = *inputs.clock;
  writer->file_start_ticks_ = clock.Now();
  writer->file_start_nanos_ = clock.EpochNanosAt(writer->file_start_ticks_);
  writer->ticks_per_nano_ = static_cast<double>(clock.TicksPerSecond()) / 1e9;
  auto nanos_to_ticks = [&clock](uint64_t nanos) {
    return static_cast<uint64_t>(static_cast<long double>(nanos) * clock.TicksPerSecond() / 1e9L);
  };
  writer->flush_interval_ticks_ = nanos_to_ticks(config.flush_interval_nanos);
  writer->chunk_time_ticks_ = nanos_to_ticks(config.chunk_time_nanos);
  writer->buffer_.Reserve(config.write_buffer_bytes + 4096);
  if (!writer->StartChunk(error)) {
    writer->closed_ = true;  // nothing to finish: the header says "unfinished"
    return nullptr;
  }
  return writer;
}

bool JfrWriter::Fail(const std::string& message, std::string* error) {
  if (!failed_) {
    failed_ = true;
    failure_ = message;
  }
  *error = failure_;
  return false;
}

uint64_t JfrWriter::ContextDurationTicks(uint64_t first_ticks, uint64_t last_ticks) const {
  // The JDK's conversion (jdk.jfr.internal.consumer.TimeConverter) with the first chunk's
  // header, which JDK 25 uses for every chunk: nanos = start + (long)((ticks - startTicks) / d).
  auto to_nanos = [this](uint64_t ticks) {
    return file_start_nanos_ + static_cast<int64_t>(static_cast<double>(static_cast<int64_t>(
                                                        ticks - file_start_ticks_)) /
                                                    ticks_per_nano_);
  };
  // End >= last + 2 ns: strictly after the last sample, with 1 ns left for the rounding of a
  // reader that converts with a later chunk's header (JDK 17 and JMC do).
  const int64_t needed_nanos = to_nanos(last_ticks) - to_nanos(first_ticks) + 2;
  uint64_t ticks =
      static_cast<uint64_t>(std::ceil(static_cast<double>(needed_nanos) * ticks_per_nano_));
  while (static_cast<int64_t>(static_cast<double>(ticks) / ticks_per_nano_) < needed_nanos) ticks++;
  return ticks;
}

bool JfrWriter::StartChunk(std::string* error) {
  chunk_number_++;
  if (!config_.repository.empty()) {
    char name[32];
    snprintf(name, sizeof(name), "/ctxprof-%06u.jfr", ++repository_sequence_);
    if (!file_.Open(config_.repository + name, error)) return Fail(*error, error);
    chunk_offset_ = 0;
  } else if (chunk_number_ == 1) {
    if (!file_.Open(config_.path, error)) return Fail(*error, error);
    chunk_offset_ = 0;
  } else {
    chunk_offset_ = file_.size();
  }

  const Clock& clock = *inputs_.clock;
  if (chunk_number_ > 1 && frames_.size() * sizeof(Frame) > config_.stack_cache_bytes) {
    DropUnusedStacks(chunk_number_ - 1);
  }
  uint64_t start_ticks = file_start_ticks_;
  if (chunk_number_ > 1) {
    // A chunk starts where the previous one ended, or later: the JDK's repository stream looks
    // for the next chunk file at or after start + duration of the current one (it skipped
    // chunks that started earlier), and JMC drops chunks whose start times are equal.
    start_ticks = std::max(clock.Now(), previous_chunk_end_ticks_);
    const uint64_t one_nano = static_cast<uint64_t>(std::ceil(ticks_per_nano_));
    while (clock.EpochNanosAt(start_ticks) < previous_chunk_end_nanos_ ||
           clock.EpochNanosAt(start_ticks) <= chunk_start_nanos_) {
      start_ticks += one_nano;
    }
  }
  chunk_start_ticks_ = start_ticks;
  chunk_start_nanos_ = clock.EpochNanosAt(start_ticks);
  chunk_max_ticks_ = start_ticks;
  last_checkpoint_offset_ = 0;
  generation_ = 1;

  ChunkHeader header;
  header.start_nanos = chunk_start_nanos_;
  header.start_ticks = chunk_start_ticks_;
  header.ticks_per_second = clock.TicksPerSecond();
  uint8_t bytes[kHeaderSize];
  header.Encode(bytes);
  buffer_.clear();
  buffer_.PutBytes(bytes, kHeaderSize);
  metadata_offset_ = buffer_.size();
  JfrMetadata::Write(attribute_names_, chunk_start_ticks_, &buffer_);
  WriteSettingsEvent();

  next_flush_ticks_ = chunk_start_ticks_ + flush_interval_ticks_;
  chunk_end_ticks_ = chunk_time_ticks_ == 0 ? 0 : chunk_start_ticks_ + chunk_time_ticks_;
  if (!WriteBuffered(error)) return false;
  return true;
}

bool JfrWriter::WriteBuffered(std::string* error) {
  if (buffer_.size() == 0) return true;
  if (!file_.Append(buffer_.data(), buffer_.size(), error)) return Fail(*error, error);
  buffer_.clear();
  return true;
}

bool JfrWriter::PatchHeader(uint8_t generation, bool final_chunk, std::string* error) {
  const Clock& clock = *inputs_.clock;
  const uint64_t end_ticks = std::max(clock.Now(), chunk_max_ticks_);
  ChunkHeader header;
  header.size = file_.size() - chunk_offset_;
  header.checkpoint_offset = last_checkpoint_offset_;
  header.metadata_offset = metadata_offset_;
  header.start_nanos = chunk_start_nanos_;
  header.duration_nanos = static_cast<uint64_t>(clock.EpochNanosAt(end_ticks) - chunk_start_nanos_);
  previous_chunk_end_ticks_ = end_ticks;
  previous_chunk_end_nanos_ = chunk_start_nanos_ + static_cast<int64_t>(header.duration_nanos);
  header.start_ticks = chunk_start_ticks_;
  header.ticks_per_second = clock.TicksPerSecond();
  header.generation = generation;
  header.flags = kFlagCompressedInts | (final_chunk ? kFlagFinalChunk : 0);
  uint8_t bytes[kHeaderSize];
  header.Encode(bytes);
  // HotSpot's order: lock (255), rewrite the fields, then publish the new generation. The
  // chunk bytes the new size covers were appended before this.
  const uint8_t locked = kGenerationLocked;
  if (!file_.WriteAt(chunk_offset_ + kGenerationOffset, &locked, 1, error) ||
      !file_.WriteAt(chunk_offset_ + 8, bytes + 8, kGenerationOffset - 8, error) ||
      !file_.WriteAt(chunk_offset_ + 66, bytes + 66, 2, error) ||
      !file_.WriteAt(chunk_offset_ + kGenerationOffset, &generation, 1, error)) {
    return Fail(*error, error);
  }
  return true;
}

bool JfrWriter::WriteSegment(bool chunk_end, bool final_chunk, std::string* error) {
  EndAllRuns();
  if (chunk_end) WriteCountersEvent();
  WriteCheckpoint(/*with_statics=*/last_checkpoint_offset_ == 0);
  if (!WriteBuffered(error)) return false;
  uint8_t generation = 0;
  if (!chunk_end) {
    generation_ = static_cast<uint8_t>(generation_ % 254 + 1);  // 1..254: never 0 or 255
    generation = generation_;
  }
  return PatchHeader(generation, final_chunk, error);
}

bool JfrWriter::FinishChunk(bool last, std::string* error) {
  if (!WriteSegment(/*chunk_end=*/true, last, error)) return false;
  chunks_finished_++;
  if (!config_.repository.empty()) {
    ChunkFile finished{file_.path(), file_.size(), inputs_.clock->EpochNanosAt(chunk_max_ticks_)};
    if (!file_.Close(error)) return Fail(*error, error);
    finished_files_bytes_ += finished.bytes;
    finished_files_.push_back(std::move(finished));
    if (!ApplyRetention(error)) return false;
  }
  return true;
}

bool JfrWriter::ApplyRetention(std::string* error) {
  const int64_t now_nanos = inputs_.clock->EpochNanosAt(inputs_.clock->Now());
  while (!finished_files_.empty()) {
    const ChunkFile& oldest = finished_files_.front();
    const bool too_big =
        config_.max_size_bytes != 0 && finished_files_bytes_ > config_.max_size_bytes;
    const bool too_old =
        config_.max_age_nanos != 0 &&
        oldest.end_epoch_nanos + static_cast<int64_t>(config_.max_age_nanos) < now_nanos;
    if (!too_big && !too_old) break;
    if (::unlink(oldest.path.c_str()) != 0 && errno != ENOENT) {
      return Fail(
          "cannot delete old chunk file " + oldest.path + " (retention): " + strerror(errno),
          error);
    }
    finished_files_bytes_ -= oldest.bytes;
    finished_files_.pop_front();
  }
  return true;
}

std::vector<std::string> JfrWriter::finished_chunk_files() const {
  std::vector<std::string> paths;
  for (const ChunkFile& file : finished_files_) paths.push_back(file.path);
  return paths;
}

bool JfrWriter::Flush(std::string* error) {
  if (failed_ || closed_) return Fail(closed_ ? "JFR writer: already closed" : failure_, error);
  return WriteSegment(/*chunk_end=*/false, /*final_chunk=*/false, error);
}

bool JfrWriter::Rotate(std::string* error) {
  if (failed_ || closed_) return Fail(closed_ ? "JFR writer: already closed" : failure_, error);
  return FinishChunk(/*last=*/false, error) && StartChunk(error);
}

bool JfrWriter::Close(std::string* error) {
  if (closed_) return !failed_ || Fail(failure_, error);
  closed_ = true;
  if (failed_) {
    std::string ignored;
    file_.Close(&ignored);
    return Fail(failure_, error);
  }
  if (!FinishChunk(/*last=*/true, error)) return false;
  if (file_.is_open() && !file_.Close(error)) return Fail(*error, error);
  return true;
}

bool JfrWriter::MaybeFlushOrRotate(uint64_t now_ticks, std::string* error) {
  if (chunk_end_ticks_ != 0 && now_ticks >= chunk_end_ticks_) return Rotate(error);
  if (flush_interval_ticks_ != 0 && now_ticks >= next_flush_ticks_) {
    next_flush_ticks_ = now_ticks + flush_interval_ticks_;
    return Flush(error);
  }
  return true;
}

bool JfrWriter::Tick(std::string* error) {
  if (failed_ || closed_) return Fail(closed_ ? "JFR writer: already closed" : failure_, error);
  if (!MaybeFlushOrRotate(inputs_.clock->Now(), error)) return false;
  return config_.repository.empty() || ApplyRetention(error);
}

void JfrWriter::AppendRecord() {
  // The size counts itself: use the shortest varint that can hold the total.
  size_t size_length = 1;
  while (JfrBuffer::VarintLength(scratch_.size() + size_length) != size_length) size_length++;
  buffer_.PutVarint(scratch_.size() + size_length);
  buffer_.PutBytes(scratch_.data(), scratch_.size());
}

bool JfrWriter::Add(const SampleRecord& sample, std::string* error) {
  if (failed_ || closed_) return Fail(closed_ ? "JFR writer: already closed" : failure_, error);
  ThreadSlot& thread = thread_slots_[sample.tid];
  const uint32_t thread_key = ThreadKey(sample.tid, &thread);
  const uint32_t stack_key = StackKey(sample);
  const bool wall = sample.kind == SampleKind::kWall;
  const bool jdk_event = !wall && config_.cpu_samples == CpuSampleEvent::kJdk;
  const uint32_t state_key =
      std::min<uint32_t>(static_cast<uint32_t>(sample.state), kJfrThreadStateCount - 1) + 1;

  // Every sample event is shorter than 128 bytes (at most 1+1+9+5+5+1+5), so its size is one
  // byte, patched after the fields.
  const size_t start = buffer_.size();
  buffer_.PutByte(0);
  buffer_.PutVarint(wall ? kJfrTypeWallClockSample
                         : (jdk_event ? kJfrTypeExecutionSample : kJfrTypeCpuSample));
  buffer_.PutVarint(sample.ticks);
  buffer_.PutVarint(thread_key);
  buffer_.PutVarint(stack_key);
  buffer_.PutVarint(state_key);
  if (!jdk_event) buffer_.PutVarint(sample.weight);
  buffer_.mutable_data()[start] = static_cast<uint8_t>(buffer_.size() - start);

  TrackContext(sample, thread_key, &thread.run);
  counters_.samples++;
  (wall ? counters_.wall_samples : counters_.cpu_samples)++;
  if (sample.flags & kSampleContextBusy) counters_.context_busy++;
  if (sample.flags & kSampleContextTorn) counters_.context_torn++;
  if (sample.flags & kSampleTruncated) counters_.truncated_stacks++;
  chunk_max_ticks_ = std::max(chunk_max_ticks_, sample.ticks);

  if (buffer_.size() >= config_.write_buffer_bytes && !WriteBuffered(error)) return false;
  if (config_.chunk_size_bytes != 0 &&
      file_.size() + buffer_.size() - chunk_offset_ + pending_pool_bytes_ >=
          config_.chunk_size_bytes) {
    return Rotate(error);
  }
  // A sample's ticks are a clock reading taken moments ago: deadlines cost no clock call.
  return MaybeFlushOrRotate(sample.ticks, error);
}

uint32_t JfrWriter::ThreadKey(int32_t tid, ThreadSlot* thread) {
  ThreadSlot& slot = *thread;
  if (slot.resolved_in_chunk != chunk_number_) {
    // Resolved once per chunk: a thread may be renamed, and a tid may be reused by a new
    // thread. A changed name gets a new key, so a key always denotes one (tid, name) pair.
    ResolvedThread resolved;
    inputs_.threads->Resolve(tid, &resolved);
    if (slot.key == 0 || threads_[slot.key - 1].name != resolved.name ||
        threads_[slot.key - 1].java_thread_id != resolved.java_thread_id) {
      threads_.push_back(Thread{std::move(resolved.name), tid, resolved.java_thread_id});
      slot.key = static_cast<uint32_t>(threads_.size());
    }
    slot.resolved_in_chunk = chunk_number_;
  }
  if (thread_pool_.Mark(slot.key, chunk_number_)) {
    pending_pool_bytes_ += 16 + 2 * threads_[slot.key - 1].name.size();
  }
  return slot.key;
}

uint32_t JfrWriter::StackKey(const SampleRecord& sample) {
  const uint32_t count = std::min<uint32_t>(sample.frame_count, kMaxStackDepth);
  const bool truncated = (sample.flags & kSampleTruncated) != 0;
  // A 128-bit fingerprint from two independent hash chains identifies the stack, so a lookup
  // touches one table slot and never the stored frames (a cache miss each on a big profile).
  // Two different stacks collide with probability about n^2 / 2^129 for n distinct stacks.
  uint64_t hash = Mix(count * 2 + (truncated ? 1 : 0));
  uint64_t check = 0x9E3779B97F4A7C15ULL ^ count ^ (truncated ? 1ULL << 63 : 0);
  for (uint32_t i = 0; i < count; i++) {
    const RawFrame& frame = sample.frames[i];
    const uint64_t extra = (static_cast<uint64_t>(static_cast<uint32_t>(frame.bci)) << 8) |
                           static_cast<uint8_t>(frame.kind);
    hash = Mix(hash ^ frame.id) + extra;
    check = ((check ^ frame.id) * 0xC2B2AE3D27D4EB4FULL + extra);
    check = (check << 31) | (check >> 33);
  }
  check = Mix(check);

  // Open addressing with linear probing, at most half full.
  const size_t mask = stack_table_.size() - 1;
  size_t index = hash & mask;
  for (; stack_table_[index].key != 0; index = (index + 1) & mask) {
    const StackSlot& slot = stack_table_[index];
    if (slot.hash == hash && slot.check == check) {
      if (stack_pool_.Mark(slot.key, chunk_number_)) MarkStack(slot.key);
      return slot.key;
    }
  }

  stacks_.push_back(Stack{hash, check, frames_.size(), count, truncated, false});
  for (uint32_t i = 0; i < count; i++) frames_.push_back(ResolveFrame(sample.frames[i]));
  const uint32_t key = static_cast<uint32_t>(stacks_.size());
  stack_table_[index] = StackSlot{hash, check, key};
  if (++live_stacks_ * 2 > stack_table_.size()) RebuildStackTable(stack_table_.size() * 2);
  if (stack_pool_.Mark(key, chunk_number_)) MarkStack(key);
  return key;
}

void JfrWriter::RebuildStackTable(size_t slots) {
  std::vector<StackSlot> table(slots);
  const size_t mask = slots - 1;
  for (size_t k = 0; k < stacks_.size(); k++) {
    const Stack& stack = stacks_[k];
    if (stack.dropped) continue;
    size_t index = stack.hash & mask;
    while (table[index].key != 0) index = (index + 1) & mask;
    table[index] = StackSlot{stack.hash, stack.check, static_cast<uint32_t>(k + 1)};
  }
  stack_table_.swap(table);
}

void JfrWriter::DropUnusedStacks(uint32_t chunk) {
  std::vector<Frame> kept;
  live_stacks_ = 0;
  for (size_t k = 0; k < stacks_.size(); k++) {
    Stack& stack = stacks_[k];
    if (stack.dropped) continue;
    if (stack_pool_.chunk_of_key[k + 1] != chunk) {
      stack.dropped = true;
      continue;
    }
    const size_t first = kept.size();
    kept.insert(kept.end(), frames_.begin() + stack.first_frame,
                frames_.begin() + stack.first_frame + stack.frame_count);
    stack.first_frame = first;
    live_stacks_++;
  }
  frames_.swap(kept);  // the old, larger allocation goes away with `kept`
  size_t slots = 4096;
  while (slots < 4 * live_stacks_) slots *= 2;
  RebuildStackTable(slots);
}

JfrWriter::Frame JfrWriter::ResolveFrame(const RawFrame& raw) {
  // Frames recur across stacks: the resolver sees each (id, bci, kind) once per recording.
  size_t mask = frame_cache_.size() - 1;
  size_t index = FrameHash(raw.id, raw.bci, raw.kind) & mask;
  for (; frame_cache_[index].used; index = (index + 1) & mask) {
    const FrameSlot& slot = frame_cache_[index];
    if (slot.id == raw.id && slot.bci == raw.bci && slot.kind == raw.kind) return slot.frame;
  }
  resolved_frame_ = ResolvedFrame();
  inputs_.frames->Resolve(raw, &resolved_frame_);
  const Frame frame{MethodKey(resolved_frame_), resolved_frame_.line_number, raw.bci,
                    resolved_frame_.type};
  frame_cache_[index] = FrameSlot{raw.id, raw.bci, raw.kind, true, frame};
  if (++cached_frames_ * 2 > frame_cache_.size()) {
    std::vector<FrameSlot> table(frame_cache_.size() * 2);
    mask = table.size() - 1;
    for (const FrameSlot& slot : frame_cache_) {
      if (!slot.used) continue;
      size_t at = FrameHash(slot.id, slot.bci, slot.kind) & mask;
      while (table[at].used) at = (at + 1) & mask;
      table[at] = slot;
    }
    frame_cache_.swap(table);
  }
  return frame;
}

uint32_t JfrWriter::MethodKey(const ResolvedFrame& frame) {
  std::string id = frame.class_name;
  id.push_back('\0');
  id += frame.method_name;
  id.push_back('\0');
  id += frame.descriptor;
  const uint32_t key = method_names_.Intern(id);
  if (key > methods_.size()) {
    methods_.push_back(Method{ClassKey(frame.class_name), symbols_.Intern(frame.method_name),
                              symbols_.Intern(frame.descriptor)});
  }
  return key;
}

uint32_t JfrWriter::ClassKey(const std::string& class_name) {
  const uint32_t key = class_names_.Intern(class_name);
  if (key > classes_.size()) {
    uint32_t package_key = 0;
    const size_t slash = class_name.rfind('/');
    if (slash != std::string::npos) {
      const std::string package = class_name.substr(0, slash);
      package_key = packages_.Intern(package);
      if (package_key > package_symbols_.size())
        package_symbols_.push_back(symbols_.Intern(package));
    }
    classes_.push_back(Class{symbols_.Intern(class_name), package_key});
  }
  return key;
}

void JfrWriter::MarkStack(uint32_t stack_key) {
  const Stack& stack = stacks_[stack_key - 1];
  pending_pool_bytes_ += 4 + 6 * stack.frame_count;
  for (uint32_t i = 0; i < stack.frame_count; i++) {
    MarkMethod(frames_[stack.first_frame + i].method_key);
  }
}

void JfrWriter::MarkMethod(uint32_t method_key) {
  if (!method_pool_.Mark(method_key, chunk_number_)) return;
  const Method& method = methods_[method_key - 1];
  pending_pool_bytes_ += 8;
  MarkSymbol(method.name_symbol);
  MarkSymbol(method.descriptor_symbol);
  if (!class_pool_.Mark(method.class_key, chunk_number_)) return;
  const Class& klass = classes_[method.class_key - 1];
  pending_pool_bytes_ += 6;
  MarkSymbol(klass.name_symbol);
  if (klass.package_key != 0 && package_pool_.Mark(klass.package_key, chunk_number_)) {
    pending_pool_bytes_ += 4;
    MarkSymbol(package_symbols_[klass.package_key - 1]);
  }
}

void JfrWriter::MarkSymbol(uint32_t symbol_key) {
  if (symbol_pool_.Mark(symbol_key, chunk_number_)) {
    pending_pool_bytes_ += 4 + symbols_.values[symbol_key - 1].size();
  }
}

void JfrWriter::TrackContext(const SampleRecord& sample, uint32_t thread_key, ContextRun* current) {
  ContextRun& run = *current;
  if (run.open && (run.context != sample.context || run.thread_key != thread_key ||
                   sample.ticks < run.last_ticks)) {
    EndRun(&run, sample.ticks);
  }
  if (sample.context.empty()) return;
  if (run.open) {
    run.last_ticks = sample.ticks;
    return;
  }
  run.open = true;
  run.context = sample.context;
  run.thread_key = thread_key;
  run.first_ticks = run.last_ticks = sample.ticks;
  for (size_t slot = 0; slot < attribute_names_.size(); slot++) {
    const uint32_t id = sample.context.attributes[slot];
    if (id != Dictionary::kUnsetId && string_pool_.Mark(id, chunk_number_)) {
      pending_pool_bytes_ += 4 + inputs_.dictionary->ValueOf(id).size();
    }
  }
}

void JfrWriter::EndRun(ContextRun* run, uint64_t next_ticks) {
  run->open = false;
  uint64_t duration = ContextDurationTicks(run->first_ticks, run->last_ticks);
  if (next_ticks > run->last_ticks && run->first_ticks + duration > next_ticks) {
    // Samples closer than ~2 ns: not overlapping the next run wins over the end margin.
    duration = next_ticks - run->first_ticks;
  }
  chunk_max_ticks_ = std::max(chunk_max_ticks_, run->first_ticks + duration);

  const ContextSnapshot& context = run->context;
  scratch_.clear();
  scratch_.PutVarint(kJfrTypeContext);
  scratch_.PutVarint(run->first_ticks);
  scratch_.PutVarint(duration);
  scratch_.PutVarint(run->thread_key);
  if (context.trace_id_high == 0 && context.trace_id_low == 0) {
    scratch_.PutNullString();
  } else {
    char hex[32];
    PutHex(context.trace_id_high, 16, hex);
    PutHex(context.trace_id_low, 16, hex + 16);
    scratch_.PutString(std::string_view(hex, 32));
  }
  if (context.span_id == 0) {
    scratch_.PutNullString();
  } else {
    char hex[16];
    PutHex(context.span_id, 16, hex);
    scratch_.PutString(std::string_view(hex, 16));
  }
  for (size_t slot = 0; slot < attribute_names_.size(); slot++) {
    scratch_.PutVarint(context.attributes[slot]);  // String pool key = Dictionary id; 0 = null
  }
  AppendRecord();
}

void JfrWriter::EndAllRuns() {
  for (auto& [tid, thread] : thread_slots_) {
    if (thread.run.open) EndRun(&thread.run, UINT64_MAX);
  }
}

void JfrWriter::WriteSettingsEvent() {
  std::string attributes;
  for (const std::string& name : attribute_names_) {
    if (!attributes.empty()) attributes += ',';
    attributes += name;
  }
  scratch_.clear();
  scratch_.PutVarint(kJfrTypeProfilerSettings);
  scratch_.PutVarint(chunk_start_ticks_);
  scratch_.PutString(config_.engine);
  scratch_.PutVarint(config_.interval_nanos);
  scratch_.PutString(config_.fallbacks);
  scratch_.PutString(inputs_.clock->Name());
  scratch_.PutVarint(inputs_.clock->TicksPerSecond());
  scratch_.PutString(config_.cpu_samples == CpuSampleEvent::kJdk ? "jdk" : "ctxprof");
  scratch_.PutVarint(IntBits(config_.stack_depth));
  scratch_.PutString(attributes);
  AppendRecord();
}

void JfrWriter::WriteCountersEvent() {
  const uint64_t dropped = inputs_.dropped_samples ? inputs_.dropped_samples() : 0;
  scratch_.clear();
  // Stamped at the chunk's end, so a reader finds the last one by time too.
  chunk_max_ticks_ = std::max(chunk_max_ticks_, inputs_.clock->Now());
  scratch_.PutVarint(kJfrTypeProfilerCounters);
  scratch_.PutVarint(chunk_max_ticks_);
  for (uint64_t value :
       {counters_.samples, counters_.cpu_samples, counters_.wall_samples, dropped,
        counters_.context_busy, counters_.context_torn, counters_.truncated_stacks,
        inputs_.dictionary->overflowed_interns(), inputs_.dictionary->truncated_values()}) {
    scratch_.PutVarint(value);
  }
  AppendRecord();
}

void JfrWriter::WriteCheckpoint(bool with_statics) {
  const uint64_t offset = file_.size() + buffer_.size() - chunk_offset_;
  const size_t start = buffer_.size();
  const size_t size_at = buffer_.ReservePaddedVarint();
  buffer_.PutVarint(1);  // record type: checkpoint
  buffer_.PutVarint(chunk_max_ticks_);
  buffer_.PutVarint(0);  // duration
  // Backwards chain: the distance to the previous checkpoint, 0 for the first one.
  buffer_.PutVarint(last_checkpoint_offset_ == 0
                        ? 0
                        : static_cast<uint64_t>(static_cast<int64_t>(last_checkpoint_offset_) -
                                                static_cast<int64_t>(offset)));
  buffer_.PutByte(kCheckpointFlush);

  PoolState* const pools[] = {&thread_pool_,  &stack_pool_,  &method_pool_, &class_pool_,
                              &package_pool_, &symbol_pool_, &string_pool_};
  uint32_t pool_count = with_statics ? 2 : 0;
  for (const PoolState* pool : pools) pool_count += pool->pending.empty() ? 0 : 1;
  buffer_.PutVarint(pool_count);
  if (with_statics) {
    buffer_.PutVarint(kJfrTypeFrameType);
    buffer_.PutVarint(kJfrFrameTypeCount);
    for (int key = 1; key <= kJfrFrameTypeCount; key++) {
      buffer_.PutVarint(key);
      buffer_.PutString(JfrFrameTypeName(static_cast<JfrFrameType>(key)));
    }
    buffer_.PutVarint(kJfrTypeThreadState);
    buffer_.PutVarint(kJfrThreadStateCount);
    for (int key = 1; key <= kJfrThreadStateCount; key++) {
      buffer_.PutVarint(key);
      buffer_.PutString(JfrThreadStateName(key));
    }
  }
  // Empty pools are omitted: the JDK rejects a pool with no entries.
  auto begin_pool = [this](uint32_t type, const PoolState& pool) {
    buffer_.PutVarint(type);
    buffer_.PutVarint(pool.pending.size());
  };
  if (!thread_pool_.pending.empty()) {
    begin_pool(kJfrTypeThread, thread_pool_);
    for (uint32_t key : thread_pool_.pending) {
      const Thread& thread = threads_[key - 1];
      buffer_.PutVarint(key);
      buffer_.PutString(thread.name);
      buffer_.PutVarint(static_cast<uint64_t>(thread.tid));
      if (thread.java_thread_id > 0) {
        buffer_.PutString(thread.name);
      } else {
        buffer_.PutNullString();  // `jfr print` then shows the OS name and tid
      }
      buffer_.PutVarint(static_cast<uint64_t>(thread.java_thread_id));
    }
  }
  if (!stack_pool_.pending.empty()) {
    begin_pool(kJfrTypeStackTrace, stack_pool_);
    for (uint32_t key : stack_pool_.pending) {
      const Stack& stack = stacks_[key - 1];
      buffer_.PutVarint(key);
      buffer_.PutByte(stack.truncated ? 1 : 0);
      buffer_.PutVarint(stack.frame_count);
      for (uint32_t i = 0; i < stack.frame_count; i++) {
        const Frame& frame = frames_[stack.first_frame + i];
        buffer_.PutVarint(frame.method_key);
        buffer_.PutVarint(IntBits(frame.line_number));
        buffer_.PutVarint(IntBits(frame.bci));
        buffer_.PutVarint(static_cast<uint32_t>(frame.type));
      }
    }
  }
  if (!method_pool_.pending.empty()) {
    begin_pool(kJfrTypeMethod, method_pool_);
    for (uint32_t key : method_pool_.pending) {
      const Method& method = methods_[key - 1];
      buffer_.PutVarint(key);
      buffer_.PutVarint(method.class_key);
      buffer_.PutVarint(method.name_symbol);
      buffer_.PutVarint(method.descriptor_symbol);
      buffer_.PutVarint(0);  // modifiers
      buffer_.PutByte(0);    // hidden
    }
  }
  if (!class_pool_.pending.empty()) {
    begin_pool(kJfrTypeClass, class_pool_);
    for (uint32_t key : class_pool_.pending) {
      const Class& klass = classes_[key - 1];
      buffer_.PutVarint(key);
      buffer_.PutVarint(0);  // class loader: null
      buffer_.PutVarint(klass.name_symbol);
      buffer_.PutVarint(klass.package_key);
      buffer_.PutVarint(0);  // modifiers
    }
  }
  if (!package_pool_.pending.empty()) {
    begin_pool(kJfrTypePackage, package_pool_);
    for (uint32_t key : package_pool_.pending) {
      buffer_.PutVarint(key);
      buffer_.PutVarint(package_symbols_[key - 1]);
    }
  }
  if (!symbol_pool_.pending.empty()) {
    begin_pool(kJfrTypeSymbol, symbol_pool_);
    for (uint32_t key : symbol_pool_.pending) {
      buffer_.PutVarint(key);
      buffer_.PutString(symbols_.values[key - 1]);
    }
  }
  if (!string_pool_.pending.empty()) {
    begin_pool(kJfrTypeString, string_pool_);
    for (uint32_t key : string_pool_.pending) {
      buffer_.PutVarint(key);
      buffer_.PutString(inputs_.dictionary->ValueOf(key));
    }
  }
  for (PoolState* pool : pools) pool->pending.clear();
  pending_pool_bytes_ = 0;
  buffer_.PatchVarint(size_at, buffer_.size() - start);
  last_checkpoint_offset_ = offset;
}

}  // namespace ctxprof
