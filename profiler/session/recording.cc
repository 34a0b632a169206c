#include "profiler/session/recording.h"

namespace ctxprof {

std::unique_ptr<Recording> Recording::Open(
    const Options& options, const RecordingSettings& settings, const Clock* clock,
    const Dictionary* dictionary, const AttributeRegistry* attributes,
    std::function<uint64_t()> dropped_samples, std::unique_ptr<FrameResolver> frames,
    std::unique_ptr<ThreadResolver> threads, const Dictionary* class_names,
    std::unique_ptr<ObjectTracker> objects, SampleSink* downstream, const UploaderConfig* upload,
    std::string* error, int* os_error) {
  JfrWriterConfig config;
  config.path = options.file;
  config.repository = options.repository;
  config.cpu_samples =
      options.jfr.cpu_samples_as_ctxprof ? CpuSampleEvent::kCtxprof : CpuSampleEvent::kJdk;
  config.wall_samples =
      options.jfr.wall_samples_as_jdk ? WallSampleEvent::kJdk : WallSampleEvent::kProfiler;
  config.context_id = options.jfr.context_id;
  config.chunk_size_bytes = options.jfr.chunk_size_bytes;
  config.chunk_time_nanos = options.jfr.chunk_time_ns;
  if (options.jfr.flush_interval_ns != 0)
    config.flush_interval_nanos = options.jfr.flush_interval_ns;
  config.max_size_bytes = options.jfr.max_size_bytes;
  config.max_age_nanos = options.jfr.max_age_ns;
  config.engine = settings.engine;
  config.interval_nanos = settings.interval_nanos;
  config.wall_interval_nanos = options.wall_enabled ? options.wall_interval_ns : 0;
  config.fallbacks = settings.fallbacks;
  config.stack_depth = options.depth;
  config.alloc_interval_bytes = options.alloc_interval_bytes;
  config.lock_threshold_nanos =
      options.lock_enabled ? static_cast<int64_t>(options.lock_threshold_ns) : -1;
  config.select_if_context = options.select == EventSelect::kIfContext;
  config.all_contexts = options.jfr.all_contexts;

  std::unique_ptr<Recording> recording(new Recording());
  recording->frames_ =
      frames != nullptr ? std::move(frames) : std::make_unique<NativeFrameResolver>();
  recording->frames_->Preload();
  recording->threads_ =
      threads != nullptr ? std::move(threads) : std::make_unique<NativeThreadResolver>();
  JfrWriterInputs inputs;
  inputs.clock = clock;
  inputs.frames = recording->frames_.get();
  inputs.threads = recording->threads_.get();
  inputs.dictionary = dictionary;
  inputs.attributes = attributes;
  inputs.dropped_samples = std::move(dropped_samples);
  inputs.class_names = class_names;
  recording->objects_ = std::move(objects);
  recording->downstream_ = downstream;
  inputs.objects = recording->objects_.get();
  if (upload != nullptr) {
    recording->uploader_ = Uploader::Start(*upload, error);
    if (recording->uploader_ == nullptr) {
      if (os_error != nullptr) *os_error = 0;
      return nullptr;
    }
    Uploader* uploader = recording->uploader_.get();
    inputs.on_chunk_finished = [uploader](FinishedChunk&& chunk) {
      uploader->Enqueue(std::move(chunk));
    };
    inputs.upload_counts = [uploader] {
      return std::make_pair(uploader->uploaded(), uploader->dropped());
    };
  }
  if (ContextMap* map = ContextMap::Global(); map != nullptr) {
    recording->spans_ = std::make_unique<SpanDrain>(map, clock);
    SpanDrain* spans = recording->spans_.get();
    inputs.dropped_spans = [spans] { return spans->dropped(); };
  }
  recording->writer_ = JfrWriter::Open(config, inputs, error, os_error);
  if (recording->writer_ == nullptr) {
    *error =
        "option '" + std::string(options.file.empty() ? "repository" : "file") + "': " + *error;
    return nullptr;
  }
  recording->clock_ = clock;
  recording->reorder_window_ticks_ = static_cast<uint64_t>(
      static_cast<long double>(kReorderWindowNanos) * clock->TicksPerSecond() / 1e9L);
  return recording;
}

void Recording::PublishProgress() {
  if (writer_ != nullptr) {
    samples_written_.store(writer_->samples_written() + writer_->events_written(),
                           std::memory_order_relaxed);
  }
}

void Recording::ReleaseWriter() {
  PublishProgress();
  writer_.reset();
}

std::string Recording::error() const {
  std::lock_guard<std::mutex> lock(error_mutex_);
  return error_;
}

void Recording::Fail(const std::string& error) {
  {
    std::lock_guard<std::mutex> lock(error_mutex_);
    if (error_.empty()) error_ = error;
  }
  failed_.store(true, std::memory_order_release);
  ReleaseWriter();  // the writer already stopped itself; nothing more is written
}

void Recording::Discard(const SampleRecord& record) {
  if (record.event.object_ref != 0 && objects_ != nullptr)
    objects_->Release(record.event.object_ref);
}

void Recording::Consume(const SampleRecord& record) {
  if (writer_ != nullptr) {
    reorderer_.Add(record);
  } else {
    if (downstream_ != nullptr) downstream_->Consume(record);
    Discard(record);
  }
}

void Recording::WriteUpTo(uint64_t horizon, const std::function<void()>* drain) {
  uint32_t since_drain = 0;
  reorderer_.Release(horizon, [this, drain, &since_drain](const SampleRecord& record) {
    if (drain != nullptr && ++since_drain == kRecordsBetweenDrains) {
      since_drain = 0;
      (*drain)();
    }
    if (downstream_ != nullptr) downstream_->Consume(record);
    std::string error;
    if (writer_ == nullptr) {
      Discard(record);
    } else if (!writer_->Add(record, &error)) {
      Fail(error);
    }
  });
}

void Recording::DrainSpans() {
  if (spans_ == nullptr || writer_ == nullptr) return;
  std::unordered_set<int32_t> timed;
  spans_->Drain([this](const SpanInterval& span) { writer_->AddSpan(span); }, &timed,
                [this](const SpanDrain::OpenInterval& open) {
                  writer_->SetOpenSpan(open.tid, open.begin_ticks, open.read_ticks, open.context);
                });
  writer_->AddTimedThreads(timed);
}

void Recording::Tick(const std::function<void()>& drain) {
  if (writer_ == nullptr) {
    // Failed: what the reorderer still held goes on to the aggregator now, not at Close.
    WriteUpTo(UINT64_MAX, nullptr);
    return;
  }
  const uint64_t now = clock_->Now();
  // Spans first, so that the records written next find the spans they fall in.
  DrainSpans();
  if (now > reorder_window_ticks_) {
    WriteUpTo(now - reorder_window_ticks_, &drain);
    if (writer_ != nullptr) writer_->SettleSpans(now - reorder_window_ticks_);
  }
  drain();
  std::string error;
  if (writer_ != nullptr && !writer_->Tick(&error)) Fail(error);
  PublishProgress();
}

bool Recording::Publish(std::vector<JfrChunkWriter::Published>* published, std::string* error) {
  const uint64_t now = clock_->Now();
  DrainSpans();
  WriteUpTo(UINT64_MAX, nullptr);
  if (writer_ != nullptr && now > reorder_window_ticks_) {
    writer_->SettleSpans(now - reorder_window_ticks_);
  }
  std::string publish_error;
  if (writer_ != nullptr && !writer_->Publish(&publish_error)) Fail(publish_error);
  if (writer_ == nullptr) {
    *error = failed() ? this->error() : "the recording is closed";
    return false;
  }
  PublishProgress();
  *published = writer_->published();
  return true;
}

std::vector<pid_t> Recording::own_threads() const {
  if (uploader_ == nullptr) return {};
  return {uploader_->tid()};
}

bool Recording::Close(std::string* error) {
  DrainSpans();
  WriteUpTo(UINT64_MAX, nullptr);
  if (writer_ != nullptr && spans_ != nullptr) {
    spans_->DrainOpen([this](const SpanInterval& span) { writer_->AddSpan(span); });
    writer_->SettleSpans(UINT64_MAX);
  }
  if (writer_ != nullptr) {
    std::string close_error;
    if (writer_->Close(&close_error)) {
      ReleaseWriter();
    } else {
      Fail(close_error);
    }
  }
  if (uploader_ != nullptr) uploader_->Stop(Uploader::kDefaultBound);
  if (!failed()) return true;
  *error = this->error();
  return false;
}

}  // namespace ctxprof
