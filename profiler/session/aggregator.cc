#include "profiler/session/aggregator.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace ctxprof {
namespace {

const char* StateName(ThreadState state) {
  switch (state) {
    case ThreadState::kRunning:
      return "running";
    case ThreadState::kSleeping:
      return "sleeping";
    case ThreadState::kUnknown:
      break;
  }
  return "unknown";
}

// ';' separates frames and '\n' lines in the collapsed format.
std::string Sanitize(std::string_view text) {
  std::string result(text);
  for (char& c : result) {
    if (c == ';' || c == '\n' || c == '\r') c = '_';
  }
  return result;
}

}  // namespace

uint32_t Aggregator::StackIdLocked(const SampleRecord& record) {
  // Ids and kinds make the stack; a bci is kept as first seen (the collapsed output has none).
  uint64_t hash = record.frame_count;
  for (uint32_t i = 0; i < record.frame_count; ++i) {
    hash = MixBits(hash ^ record.frames[i].id) + static_cast<uint64_t>(record.frames[i].kind);
  }
  hash = MixBits(hash);
  auto same_stack = [this, &record](uint32_t at) {
    const std::vector<RawFrame>& frames = stacks_[at];
    if (frames.size() != record.frame_count) return false;
    for (uint32_t i = 0; i < record.frame_count; ++i) {
      if (frames[i].id != record.frames[i].id || frames[i].kind != record.frames[i].kind) {
        return false;
      }
    }
    return true;
  };
  bool inserted;
  const uint32_t id =
      stack_index_.FindOrInsert(hash, static_cast<uint32_t>(stacks_.size()), same_stack, &inserted);
  if (inserted) stacks_.emplace_back(record.frames, record.frames + record.frame_count);
  return id;
}

Aggregator::Counts* Aggregator::FindLocked(const Key& key) {
  const uint32_t at = entry_index_.Find(
      HashObjectWords(key), [this, &key](uint32_t at) { return entries_[at].key == key; });
  return at == FlatIndex::kAbsent ? nullptr : &entries_[at].counts;
}

Aggregator::Counts& Aggregator::FindOrAddLocked(const Key& key) {
  bool inserted;
  const uint32_t at = entry_index_.FindOrInsert(
      HashObjectWords(key), static_cast<uint32_t>(entries_.size()),
      [this, &key](uint32_t at) { return entries_[at].key == key; }, &inserted);
  if (inserted) entries_.push_back(Entry{key, Counts{0, 0}});
  return entries_[at].counts;
}

Aggregator::Counts& Aggregator::CountsLocked(Key key) {
  // Below the first limit every key keeps its detail: one lookup that inserts if new.
  if (entries_.size() < limits_.request_ids) return FindOrAddLocked(key);
  if (Counts* counts = FindLocked(key)) return *counts;
  const ContextSnapshot& context = key.context;
  if (context.trace_id_high != 0 || context.trace_id_low != 0 || context.span_id != 0) {
    key.detail = ContextDetail::kWithoutRequestIds;
    key.context.trace_id_high = key.context.trace_id_low = key.context.span_id = 0;
    ++counters_.request_ids_folded;
    if (Counts* counts = FindLocked(key)) return *counts;
  }
  if (entries_.size() >= limits_.contexts && !key.context.empty()) {
    key.detail = ContextDetail::kNone;
    key.context = ContextSnapshot{};
    ++counters_.contexts_folded;
  }
  return FindOrAddLocked(key);
}

void Aggregator::Consume(const SampleRecord& record) {
  if (!IsSample(record.kind)) return;  // runtime events go to the JFR recording only
  std::lock_guard<std::mutex> lock(mutex_);
  Key key;
  key.kind = record.kind;
  key.state = record.state;
  key.detail = ContextDetail::kFull;
  key.zero = 0;
  key.stack = StackIdLocked(record);
  key.context = record.context;
  Counts& counts = CountsLocked(key);
  ++counts.samples;
  counts.weight += record.weight;
  ++counters_.samples;
  if (record.flags & kSampleTruncated) ++counters_.truncated;
  if (record.flags & kSampleContextBusy) ++counters_.context_busy;
  if (record.flags & kSampleContextTorn) ++counters_.context_torn;
  const size_t engine = static_cast<size_t>(record.engine);
  if (engine < 4) ++counters_.by_engine[engine];
}

RawAggregatedStack Aggregator::EntryLocked(const Entry& entry) const {
  const Key& key = entry.key;
  return {key.kind,           key.state,          key.detail,
          key.context,        stacks_[key.stack], entry.counts.samples,
          entry.counts.weight};
}

std::vector<std::string> Aggregator::SymbolizeLocked(const std::vector<RawFrame>& raw) {
  std::vector<std::string> frames;
  frames.reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    const RawFrame& frame = raw[i];
    if (frame.kind == FrameKind::kNative) {
      frames.push_back(symbolizer_.Resolve(frame.id, /*is_return_address=*/i > 0));
    } else if (frame.kind == FrameKind::kKernel) {
      // async-profiler's suffix for kernel frames, which flame graph tools color apart.
      frames.push_back(symbolizer_.ResolveKernel(frame.id, frame.bci == kNativeReturnAddress) +
                       "_[k]");
    } else {
      frames.push_back(JavaFrameLocked(frame));
    }
  }
  return frames;
}

std::string Aggregator::JavaFrameLocked(const RawFrame& frame) {
  if (java_frames_ == nullptr) {
    char text[48];
    snprintf(text, sizeof(text), "[java 0x%" PRIx64 "]", frame.id);
    return text;
  }
  ResolvedFrame resolved;
  java_frames_->Resolve(frame, &resolved);
  std::string name = resolved.class_name;
  for (char& c : name) {
    if (c == '/') c = '.';
  }
  return name + "." + resolved.method_name;
}

std::vector<AggregatedStack> Aggregator::Stacks() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<AggregatedStack> stacks;
  stacks.reserve(entries_.size());
  for (const auto& [key, counts] : entries_) {
    stacks.push_back({key.kind, key.state, key.detail, key.context,
                      SymbolizeLocked(stacks_[key.stack]), counts.samples, counts.weight});
  }
  return stacks;
}

std::vector<RawAggregatedStack> Aggregator::RawStacks() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<RawAggregatedStack> stacks;
  stacks.reserve(entries_.size());
  for (const Entry& entry : entries_) stacks.push_back(EntryLocked(entry));
  return stacks;
}

AggregatorCounters Aggregator::counters() {
  std::lock_guard<std::mutex> lock(mutex_);
  return counters_;
}

std::string Aggregator::ContextFramesLocked(ContextDetail detail, const ContextSnapshot& context) {
  if (detail == ContextDetail::kNone) return "[context=folded];";
  std::string frames;
  char text[64];
  if (detail == ContextDetail::kWithoutRequestIds) {
    frames += "[trace=folded];";
  } else if (context.trace_id_high != 0 || context.trace_id_low != 0) {
    snprintf(text, sizeof(text), "[trace=%016" PRIx64 "%016" PRIx64 "];", context.trace_id_high,
             context.trace_id_low);
    frames += text;
  }
  if (context.span_id != 0) {
    snprintf(text, sizeof(text), "[span=%016" PRIx64 "];", context.span_id);
    frames += text;
  }
  for (int slot = 0; slot < kAttributeSlots; ++slot) {
    const uint32_t id = context.attributes[slot];
    if (id == Dictionary::kUnsetId) continue;
    const std::string slot_name = static_cast<size_t>(slot) < attribute_names_.size()
                                      ? attribute_names_[static_cast<size_t>(slot)]
                                      : "slot" + std::to_string(slot);
    std::string_view value = dictionary_ != nullptr ? dictionary_->ValueOf(id) : std::string_view();
    frames += "[" + Sanitize(slot_name) + "=" +
              (value.empty() ? "#" + std::to_string(id) : Sanitize(value)) + "];";
  }
  return frames;
}

Status Aggregator::WriteCollapsed(const std::string& path) {
  std::lock_guard<std::mutex> lock(mutex_);
  FILE* out = fopen(path.c_str(), "we");
  if (out == nullptr) {
    const int err = errno;
    return Status::Io("cannot open dump file '" + path + "' for writing: " + strerror(err) +
                          "; check that the directory exists and is writable",
                      err);
  }
  for (const auto& [key, counts] : entries_) {
    std::string line = std::string("[") + SampleKindName(key.kind) + "];[" + StateName(key.state) +
                       "];" + ContextFramesLocked(key.detail, key.context);
    const std::vector<std::string> frames = SymbolizeLocked(stacks_[key.stack]);
    for (size_t i = frames.size(); i > 0; --i) {
      line += Sanitize(frames[i - 1]);
      if (i > 1) line += ';';
    }
    if (!line.empty() && line.back() == ';') line.pop_back();
    line += ' ' + std::to_string(counts.weight) + '\n';
    fputs(line.c_str(), out);
  }
  const bool write_failed = ferror(out) != 0;
  const int saved = errno;
  if (fclose(out) != 0 || write_failed) {
    const int err = write_failed ? saved : errno;
    return Status::Io("cannot write dump file '" + path + "': " + strerror(err), err);
  }
  return Status();
}

}  // namespace ctxprof
