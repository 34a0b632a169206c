#include "profiler/jfr_events/jfr_writer.h"

#include <algorithm>
#include <cstdio>

#include "ctxprof_version.h"
#include "profiler/jfr/jfr_copy.h"
#include "profiler/jfr/jfr_metadata.h"

namespace ctxprof {
namespace {

JfrEventLayout LayoutOf(const JfrWriterConfig& config) {
  JfrEventLayout layout;
  layout.context_id = config.context_id;
  layout.tlab_allocations = config.pyroscope;
  return layout;
}

}  // namespace

JfrWriter::JfrWriter(const JfrWriterConfig& config, const JfrWriterInputs& inputs,
                     std::unique_ptr<ChunkClock> chunk_clock, std::unique_ptr<JfrChunkWriter> chunk)
    : config_(config),
      inputs_(inputs),
      attribute_names_(inputs.attributes->names()),
      chunk_clock_(std::move(chunk_clock)),
      chunk_(std::move(chunk)),
      encoder_(LayoutOf(config)),
      stacks_(inputs.frames, &methods_),
      threads_(inputs.threads),
      values_(inputs.dictionary),
      runs_(chunk_.get(), &encoder_, &values_, &context_ids_, attribute_names_.size()),
      spans_(chunk_.get(), &encoder_, &values_, &context_ids_, attribute_names_.size(),
             config.all_contexts,
             [this](int32_t tid, uint64_t virtual_thread_id) {
               return threads_.Key(tid, virtual_thread_id, chunk_->chunk_number(),
                                   &pending_pool_bytes_);
             }),
      latencies_(attribute_names_.size(), inputs.clock->TicksPerSecond()),
      live_(inputs.objects != nullptr
                ? std::make_unique<LiveObjects>(inputs.objects, LiveObjects::kDefaultCapacity)
                : nullptr) {}

JfrWriter::~JfrWriter() { Close(); }

StatusOr<std::unique_ptr<JfrWriter>> JfrWriter::Open(const JfrWriterConfig& config,
                                                     const JfrWriterInputs& inputs) {
  if (inputs.clock == nullptr || inputs.frames == nullptr || inputs.threads == nullptr ||
      inputs.dictionary == nullptr || inputs.attributes == nullptr) {
    return Status::InvalidArgument(
        "JFR writer: clock, frame and thread resolvers, dictionary and attribute registry "
        "are all required");
  }
  if (config.pyroscope && inputs.clock->TicksPerSecond() != kNanosPerSecond) {
    return Status::InvalidArgument(
        std::string("JFR writer: upload= needs a clock in nanoseconds, not '") +
        inputs.clock->Name() +
        "' (Pyroscope reads lock and park durations as nanoseconds): use clock=monotonic");
  }
  JfrChunkConfig chunk_config;
  chunk_config.path = config.path;
  chunk_config.repository = config.repository;
  chunk_config.chunk_size_bytes = config.chunk_size_bytes;
  chunk_config.chunk_time_nanos = config.chunk_time_nanos;
  chunk_config.flush_interval_nanos = config.flush_interval_nanos;
  chunk_config.max_size_bytes = config.max_size_bytes;
  chunk_config.max_age_nanos = config.max_age_nanos;
  chunk_config.write_buffer_bytes = config.write_buffer_bytes;
  auto chunk_clock = std::make_unique<ChunkClock>(inputs.clock);
  StatusOr<std::unique_ptr<JfrChunkWriter>> chunk =
      JfrChunkWriter::Open(chunk_config, chunk_clock.get());
  if (!chunk.ok()) return chunk.status();
  std::unique_ptr<JfrWriter> writer(
      new JfrWriter(config, inputs, std::move(chunk_clock), std::move(chunk.value())));
  if (Status started = writer->StartChunk(); !started.ok()) {
    writer->closed_ = true;  // nothing to finish: the header says "unfinished"
    return started;
  }
  return std::move(writer);
}

Status CompactRecordingFile(const std::string& path, const std::vector<uint64_t>& chunk_starts) {
  JfrCompactOptions options;
  options.chunk_starts = chunk_starts;
  options.first_chunk_only = {kJfrTypeActiveSetting, kJfrTypeProfilerSettings};
  options.last_chunk_only = {kJfrTypeProfilerCounters};  // totals since the start
  // Only stack frames and other pool entries refer to these (MethodPool).
  options.renumber_by_use = {kJfrTypeMethod, kJfrTypeClass, kJfrTypePackage, kJfrTypeSymbol};
  return CompactChunks(path, options);
}

Status JfrWriter::Fail(Status status) {
  if (failure_.ok()) failure_ = std::move(status);
  return failure_;
}

Status JfrWriter::StartChunk() {
  if (chunk_->chunk_number() > 0 && stacks_.cached_frame_bytes() > config_.stack_cache_bytes) {
    stacks_.DropUnused(chunk_->chunk_number());
  }
  if (static_cast<size_t>(inputs_.attributes->size()) > attribute_names_.size()) {
    AdoptNewAttributes();
  }
  if (Status begun = chunk_->BeginChunk(); !begun.ok()) return Fail(std::move(begun));
  samples_in_chunk_ = 0;
  threads_.ForgetVirtualThreads(chunk_->chunk_number());
  chunk_->MarkMetadata();
  if (metadata_declarations_.size() == 0) {
    JfrEventLayout layout = LayoutOf(config_);
    layout.attribute_generation = attribute_generation_;
    JfrMetadata::SerializeDeclarations(attribute_names_, layout, &metadata_declarations_);
  }
  JfrMetadata::Write(metadata_declarations_, JfrMetadata::MetadataIdOf(attribute_generation_),
                     chunk_->chunk_start_ticks(), &chunk_->out());
  WriteActiveSettings();
  SettingsEventFields settings;
  settings.ticks = chunk_->chunk_start_ticks();
  settings.engine = config_.engine;
  settings.interval_nanos = config_.interval_nanos;
  settings.fallbacks = config_.fallbacks;
  settings.clock = inputs_.clock->Name();
  settings.ticks_per_second = inputs_.clock->TicksPerSecond();
  settings.cpu_samples = config_.cpu_samples == CpuSampleEvent::kJdk ? "jdk" : "ctxprof";
  settings.stack_depth = config_.stack_depth;
  settings.alloc_interval_bytes = config_.alloc_interval_bytes;
  settings.lock_threshold_nanos = config_.lock_threshold_nanos;
  settings.select = config_.select_if_context ? "if-context" : "all";
  settings.version = kCtxprofVersion;
  for (const std::string& name : attribute_names_) {
    if (!settings.attributes.empty()) settings.attributes += ',';
    settings.attributes += name;
  }
  encoder_.AppendSettings(settings, &chunk_->out());
  Status written = chunk_->Write();
  return written.ok() ? written : Fail(std::move(written));
}

void JfrWriter::AdoptNewAttributes() {
  attribute_names_ = inputs_.attributes->names();
  attribute_generation_++;
  encoder_.set_attribute_generation(attribute_generation_);
  metadata_declarations_.clear();
  runs_.set_attribute_count(attribute_names_.size());
  spans_.set_attribute_count(attribute_names_.size());
  latencies_.set_attribute_count(attribute_names_.size());
  chunk_->ContinueNone();
}

void JfrWriter::WriteActiveSettings() {
  // async-profiler's vocabulary: `event` is the CPU engine (cpu, ctimer, itimer) or wall, and
  // none when only runtime events are on (event=alloc); `alloc` is the allocation sampling
  // interval in bytes, `lock` the threshold in nanoseconds.
  const std::string event = config_.engine.substr(0, config_.engine.find('+'));
  const uint64_t ticks = chunk_->chunk_start_ticks();
  auto setting = [&](uint32_t event_type, const char* name, const std::string& value) {
    encoder_.AppendActiveSetting({ticks, event_type, name, value}, &chunk_->out());
  };
  if (!event.empty()) setting(kJfrTypeExecutionSample, "event", event);
  if (!event.empty() && event != "wall") {
    setting(kJfrTypeExecutionSample, "interval", std::to_string(config_.interval_nanos));
  }
  if (config_.wall_interval_nanos != 0) {
    setting(kJfrTypeWallClockSample, "wall", std::to_string(config_.wall_interval_nanos));
  }
  if (config_.alloc_interval_bytes != 0) {
    setting(config_.pyroscope ? kJfrTypeObjectAllocationInNewTLAB : kJfrTypeObjectAllocationSample,
            "alloc", std::to_string(config_.alloc_interval_bytes));
  }
  if (config_.lock_threshold_nanos >= 0) {
    setting(kJfrTypeJavaMonitorEnter, "lock", std::to_string(config_.lock_threshold_nanos));
  }
}

void JfrWriter::ReportFinishedChunk(uint32_t chunk) {
  const JfrChunkWriter::FinishedChunk& finished = chunk_->last_finished_chunk();
  FinishedChunk report;
  report.path = finished.path;
  report.start_epoch_nanos = finished.start_nanos;
  report.end_epoch_nanos = finished.end_nanos;
  for (const auto& [id, context] : context_ids_.chunk_contexts(chunk)) {
    FinishedChunk::Context entry{id, {}};
    char hex[33];
    if (context.trace_id_high != 0 || context.trace_id_low != 0) {
      snprintf(hex, sizeof(hex), "%016llx%016llx",
               static_cast<unsigned long long>(context.trace_id_high),
               static_cast<unsigned long long>(context.trace_id_low));
      entry.labels.push_back({"trace_id", hex});
    }
    if (context.span_id != 0) {
      snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(context.span_id));
      entry.labels.push_back({"span_id", hex});
    }
    for (size_t slot = 0; slot < attribute_names_.size(); slot++) {
      const uint32_t value = context.attributes[slot];
      if (value == Dictionary::kUnsetId) continue;
      entry.labels.push_back({JfrMetadata::FieldNameOf(attribute_names_[slot]),
                              std::string(inputs_.dictionary->ValueOf(value))});
    }
    report.contexts.push_back(std::move(entry));
  }
  inputs_.on_chunk_finished(std::move(report));
}

Status JfrWriter::WriteSegment(JfrChunkWriter::SegmentEnd end) {
  const bool chunk_end = end != JfrChunkWriter::SegmentEnd::kSegment;
  spans_.WriteTriggered(chunk_end, &pending_pool_bytes_);
  // The recording's end completes every span it saw close: no interval can follow.
  if (end == JfrChunkWriter::SegmentEnd::kFinalChunk) latencies_.CountUnfinished();
  latencies_.Write(chunk_.get(), &encoder_, &values_, &pending_pool_bytes_);
  runs_.EndAll();
  if (chunk_end) {
    // Stamped at the chunk's end, so a reader finds the last one by time too.
    chunk_->NoteEventTicks(inputs_.clock->Now());
    const std::pair<uint64_t, uint64_t> uploads =
        inputs_.upload_counts ? inputs_.upload_counts() : std::make_pair(uint64_t{0}, uint64_t{0});
    encoder_.AppendCounters(
        CounterEventFields{
            chunk_->max_ticks(), counters_.samples, counters_.cpu_samples, counters_.wall_samples,
            inputs_.dropped_samples ? inputs_.dropped_samples() : 0, counters_.context_busy,
            counters_.context_torn, counters_.truncated_stacks,
            inputs_.dictionary->overflowed_interns(), inputs_.dictionary->truncated_values(),
            uploads.first, uploads.second, counters_.allocation_samples, counters_.monitor_enters,
            counters_.thread_parks, counters_.live_objects,
            live_ != nullptr ? live_->untracked() : 0, spans_.spans_written(),
            inputs_.dropped_spans ? inputs_.dropped_spans() : 0},
        &chunk_->out());
  }
  WriteCheckpoint();
  const uint32_t chunk = chunk_->chunk_number();  // the one CommitSegment may finish
  if (Status committed = chunk_->CommitSegment(end); !committed.ok()) {
    return Fail(std::move(committed));
  }
  if (chunk_end && !chunk_->publishes_whole_chunks() && inputs_.end_period) {
    inputs_.end_period(chunk_->last_finished_chunk().path,
                       end == JfrChunkWriter::SegmentEnd::kFinalChunk);
    chunk_->RestatLastFinished();
  }
  if (chunk_end && !chunk_->publishes_whole_chunks() && inputs_.on_chunk_finished) {
    ReportFinishedChunk(chunk);
  }
  return Status();
}

void JfrWriter::WriteCheckpoint() {
  JfrBuffer& out = chunk_->out();
  stacks_.QueueMethods(&pending_pool_bytes_);  // before the pools are counted
  const bool with_statics = chunk_->first_checkpoint_pending();
  const JfrChunkWriter::Checkpoint checkpoint = chunk_->BeginCheckpoint();
  out.PutVarint((with_statics ? JfrMetadata::kStaticPoolCount : 0) +
                (threads_.has_pending() ? 1 : 0) + (stacks_.has_pending() ? 1 : 0) +
                methods_.pending_pools() + (values_.has_pending() ? 1 : 0));
  if (with_statics) JfrMetadata::WriteStaticPools(&out);
  threads_.WritePending(&out);
  stacks_.WritePending(&out);
  methods_.WritePending(&out);
  values_.WritePending(&out);
  pending_pool_bytes_ = 0;
  chunk_->EndCheckpoint(checkpoint);
}

// After a failure or Close, every call returns the first failure, or else that it is closed.
Status JfrWriter::Flush() {
  if (!failure_.ok() || closed_) return Fail(Status::WrongState("JFR writer: already closed"));
  if (chunk_->publishes_whole_chunks()) {
    return samples_in_chunk_ == 0 ? Status() : EndChunk(JfrChunkWriter::SegmentEnd::kFlush);
  }
  return WriteSegment(JfrChunkWriter::SegmentEnd::kSegment);
}

Status JfrWriter::Publish() {
  if (chunk_->publishes_whole_chunks()) return Flush();
  if (!failure_.ok() || closed_) return Fail(Status::WrongState("JFR writer: already closed"));
  return samples_in_chunk_ == 0 ? Status() : Rotate();
}

Status JfrWriter::Rotate() {
  if (!failure_.ok() || closed_) return Fail(Status::WrongState("JFR writer: already closed"));
  if (!inputs_.request_period_boundary || chunk_->publishes_whole_chunks()) {
    return EndChunk(JfrChunkWriter::SegmentEnd::kChunk);
  }
  if (!period_recorder_ended_ && !boundary_requested_) {
    boundary_requested_at_ = inputs_.clock->Now();
    inputs_.request_period_boundary();
    boundary_requested_ = true;
  }
  return Status();
}

uint64_t JfrWriter::PollBoundary() {
  if (!boundary_under_way()) return boundary_ticks_;
  const uint64_t boundary = inputs_.period_boundary();
  if (boundary == JfrWriterInputs::kNoMorePeriods) {
    boundary_requested_ = false;
    period_recorder_ended_ = true;
  } else if (boundary == JfrWriterInputs::kPeriodBoundaryFailed) {
    boundary_ticks_ = inputs_.clock->Now();
  } else {
    boundary_ticks_ = boundary;
  }
  return boundary_ticks_;
}

Status JfrWriter::EndPeriod() {
  if (!failure_.ok() || closed_) return Fail(Status::WrongState("JFR writer: already closed"));
  if (boundary_ticks_ == 0) return Status();
  spans_.CutAt(boundary_ticks_, &pending_pool_bytes_);
  boundary_ticks_ = 0;
  boundary_requested_ = false;
  return EndChunk(JfrChunkWriter::SegmentEnd::kChunk);
}

Status JfrWriter::EndChunk(JfrChunkWriter::SegmentEnd end) {
  Status ended = WriteSegment(end);
  return ended.ok() ? StartChunk() : ended;
}

Status JfrWriter::Close() {
  if (closed_) return failure_;
  closed_ = true;
  if (!failure_.ok()) {
    chunk_->Close();  // the first failure is the one to report
    return failure_;
  }
  WriteLiveObjects();
  if (Status ended = WriteSegment(JfrChunkWriter::SegmentEnd::kFinalChunk); !ended.ok()) {
    return ended;
  }
  if (Status closed = chunk_->Close(); !closed.ok()) return Fail(std::move(closed));
  if (!chunk_->publishes_whole_chunks()) return Status();
  Status compacted = CompactRecordingFile(config_.path, chunk_->chunk_starts());
  return compacted.ok()
             ? compacted
             : Fail(compacted.Prefixed("it holds everything recorded, but with a chunk per flush, "
                                       "not compacted"));
}

Status JfrWriter::DoWhatIsDue(uint64_t now_ticks) {
  const JfrChunkWriter::Due due = chunk_->DueAt(now_ticks);
  if (due != JfrChunkWriter::Due::kNothing && chunk_->publishes_whole_chunks() &&
      samples_in_chunk_ == 0) {
    chunk_->RestartDeadlines(now_ticks);  // nothing to publish: no empty chunk in the file
    return Status();
  }
  switch (due) {
    case JfrChunkWriter::Due::kRotate:
      return Rotate();
    case JfrChunkWriter::Due::kFlush:
      return Flush();
    case JfrChunkWriter::Due::kNothing:
      break;
  }
  return Status();
}

Status JfrWriter::Tick() {
  if (!failure_.ok() || closed_) return Fail(Status::WrongState("JFR writer: already closed"));
  if (Status done = DoWhatIsDue(inputs_.clock->Now()); !done.ok()) return done;
  Status retained = chunk_->ApplyRetention();
  return retained.ok() ? retained : Fail(std::move(retained));
}

uint32_t JfrWriter::ClassKeyOf(uint32_t class_id) {
  if (class_id == Dictionary::kUnsetId || inputs_.class_names == nullptr) return 0;
  if (class_id >= class_keys_.size()) class_keys_.resize(class_id + 1, 0);
  uint32_t& key = class_keys_[class_id];
  if (key == 0) key = methods_.ClassKey(std::string(inputs_.class_names->ValueOf(class_id)));
  methods_.MarkClass(key, chunk_->chunk_number(), &pending_pool_bytes_);
  return key;
}

void JfrWriter::WriteLiveObjects() {
  if (live_ == nullptr) return;
  const uint32_t chunk = chunk_->chunk_number();
  const uint64_t now = inputs_.clock->Now();
  live_->Finish([&](const TrackedAllocation& allocation) {
    const uint32_t thread_key = threads_.Key(allocation.tid, 0, chunk, &pending_pool_bytes_);
    const uint32_t stack_key =
        stacks_.Carry(allocation.stack_key, chunk, &pending_pool_bytes_) ? allocation.stack_key : 0;
    methods_.MarkClass(allocation.class_key, chunk, &pending_pool_bytes_);
    const uint64_t context_id =
        runs_.CoverInstant(thread_key, allocation.ticks, allocation.context, &pending_pool_bytes_);
    encoder_.AppendLiveObject(
        LiveObjectFields{allocation.ticks, thread_key, stack_key, allocation.class_key,
                         allocation.object_bytes, context_id},
        &chunk_->out());
    counters_.live_objects++;
  });
  chunk_->NoteEventTicks(now);
}

uint64_t JfrWriter::JoinContext(const SampleRecord& record, uint32_t thread_key,
                                uint64_t start_ticks) {
  if (spans_.IsTimed(record.tid)) {
    return spans_.Join(record.tid, record.virtual_thread_id, start_ticks, record.context,
                       &pending_pool_bytes_);
  }
  return runs_.Track(record.tid, thread_key, start_ticks, record.ticks, record.context,
                     &pending_pool_bytes_);
}

void JfrWriter::AppendSample(const SampleRecord& sample, uint32_t thread_key, uint32_t stack_key) {
  const bool wall = sample.kind == SampleKind::kWall;
  uint32_t type;
  uint32_t state_key;
  if (wall) {
    type = config_.wall_samples == WallSampleEvent::kProfiler ? kJfrTypeWallClockSample
                                                              : kJfrTypeNativeMethodSample;
    // A wall sample whose state could not be read (the pc was unreadable) was not seen in a
    // system call: runnable. STATE_DEFAULT would make it a CPU sample to every reader.
    state_key = sample.state == ThreadState::kSleeping ? kJfrStateSleeping : kJfrStateRunnable;
  } else {
    type =
        config_.cpu_samples == CpuSampleEvent::kJdk ? kJfrTypeExecutionSample : kJfrTypeCpuSample;
    state_key = kJfrStateDefault;
  }
  const uint64_t context_id = JoinContext(sample, thread_key, sample.ticks);
  const uint32_t weight = std::max<uint32_t>(sample.weight, 1);
  SampleEventFields event{type, sample.ticks, thread_key, stack_key, state_key, weight, context_id};
  if (config_.pyroscope && type == kJfrTypeWallClockSample && weight > 1) {
    // Pyroscope's parser gives the next CPU, allocation and lock events this event's `samples`
    // as their weight: end with a weight of 1 (the file comment).
    event.weight = weight - 1;
    encoder_.AppendSample(event, &chunk_->out());
    event.weight = 1;
  }
  encoder_.AppendSample(event, &chunk_->out());
  counters_.samples++;
  samples_in_chunk_++;
  (wall ? counters_.wall_samples : counters_.cpu_samples)++;
}

void JfrWriter::AppendRuntimeEvent(const SampleRecord& event, uint32_t thread_key,
                                   uint32_t stack_key) {
  const uint32_t class_key = ClassKeyOf(event.event.class_id);
  if (event.kind == SampleKind::kAllocation) {
    const uint64_t context_id = JoinContext(event, thread_key, event.ticks);
    encoder_.AppendAllocation(
        AllocationEventFields{event.ticks, thread_key, stack_key, class_key, event.event.amount,
                              event.event.object_bytes, context_id},
        &chunk_->out());
    counters_.allocation_samples++;
    if (event.event.object_ref != 0 && live_ != nullptr) {
      live_->Add(TrackedAllocation{event.event.object_ref, event.ticks, event.tid, stack_key,
                                   class_key, event.event.object_bytes, event.context});
    }
    return;
  }
  // A wait's context interval covers it from its start to its end.
  const bool park = event.kind == SampleKind::kThreadPark;
  const uint64_t start = event.ticks - std::min(event.event.amount, event.ticks);
  const uint64_t context_id = JoinContext(event, thread_key, start);
  WaitEventFields fields{park ? kJfrTypeThreadPark : kJfrTypeJavaMonitorEnter,
                         start,
                         event.ticks - start,
                         thread_key,
                         stack_key,
                         class_key,
                         kNoParkTimeout,
                         kNoParkTimeout,
                         context_id};
  if (park) {
    (event.event.park_absolute ? fields.until_millis : fields.timeout_nanos) =
        event.event.park_time;
    counters_.thread_parks++;
  } else {
    counters_.monitor_enters++;
  }
  encoder_.AppendWait(fields, &chunk_->out());
}

Status JfrWriter::Add(const SampleRecord& sample) {
  if (!failure_.ok() || closed_) {
    if (sample.event.object_ref != 0 && inputs_.objects != nullptr) {
      inputs_.objects->Release(sample.event.object_ref);
    }
    return Fail(Status::WrongState("JFR writer: already closed"));
  }
  const uint32_t chunk = chunk_->chunk_number();
  const uint32_t thread_key =
      threads_.Key(sample.tid, sample.virtual_thread_id, chunk, &pending_pool_bytes_);
  const uint32_t stack_key = stacks_.Key(sample, chunk, &pending_pool_bytes_);
  if (IsSample(sample.kind)) {
    AppendSample(sample, thread_key, stack_key);
  } else {
    AppendRuntimeEvent(sample, thread_key, stack_key);
  }

  if (sample.flags & kSampleContextBusy) counters_.context_busy++;
  if (sample.flags & kSampleContextTorn) counters_.context_torn++;
  if (sample.flags & kSampleTruncated) counters_.truncated_stacks++;
  chunk_->NoteEventTicks(sample.ticks);

  if (Status written = chunk_->WriteIfFull(); !written.ok()) return Fail(std::move(written));
  if (chunk_->Full(pending_pool_bytes_)) return Rotate();
  if (chunk_->BufferFull(pending_pool_bytes_)) return EndChunk(JfrChunkWriter::SegmentEnd::kFlush);
  // A record's ticks are a clock reading taken moments ago: deadlines cost no clock call.
  return DoWhatIsDue(sample.ticks);
}

}  // namespace ctxprof
