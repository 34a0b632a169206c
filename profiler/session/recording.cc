#include "profiler/session/recording.h"

#include <unistd.h>

#include <algorithm>

namespace ctxprof {

StatusOr<std::unique_ptr<Recording>> Recording::Open(const Options& options,
                                                     RecordingInputs inputs) {
  const RecordingSettings& settings = inputs.settings;
  JfrWriterConfig config;
  config.path = options.file;
  config.repository = options.repository;
  config.cpu_samples =
      options.jfr.cpu_samples_as_ctxprof ? CpuSampleEvent::kCtxprof : CpuSampleEvent::kJdk;
  config.wall_samples =
      options.jfr.wall_samples_as_jdk ? WallSampleEvent::kJdk : WallSampleEvent::kProfiler;
  config.context_id = options.jfr.context_id;
  config.pyroscope = options.jfr.pyroscope;
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
      inputs.frames != nullptr ? std::move(inputs.frames) : std::make_unique<NativeFrameResolver>();
  recording->frames_->Preload();
  recording->threads_ = inputs.threads != nullptr ? std::move(inputs.threads)
                                                  : std::make_unique<NativeThreadResolver>();
  JfrWriterInputs writer_inputs;
  writer_inputs.clock = inputs.clock;
  writer_inputs.frames = recording->frames_.get();
  writer_inputs.threads = recording->threads_.get();
  writer_inputs.dictionary = inputs.dictionary;
  writer_inputs.attributes = inputs.attributes;
  writer_inputs.dropped_samples = std::move(inputs.dropped_samples);
  writer_inputs.class_names = inputs.class_names;
  recording->objects_ = std::move(inputs.objects);
  recording->downstream_ = inputs.downstream;
  writer_inputs.objects = recording->objects_.get();
  for (const UploaderConfig* config : {inputs.upload, inputs.otlp}) {
    if (config == nullptr) continue;
    StatusOr<std::unique_ptr<Uploader>> uploader = Uploader::Start(*config);
    if (!uploader.ok()) return uploader.status();
    recording->uploaders_.push_back(std::move(uploader.value()));
  }
  if (!recording->uploaders_.empty()) {
    const std::vector<std::unique_ptr<Uploader>>* started = &recording->uploaders_;
    writer_inputs.on_chunk_finished = [started](FinishedChunk&& chunk) {
      // Each uploader opens the file itself; the last one may take the chunk's labels.
      for (size_t i = 0; i + 1 < started->size(); i++) {
        FinishedChunk copy = chunk;
        (*started)[i]->Enqueue(std::move(copy));
      }
      started->back()->Enqueue(std::move(chunk));
    };
    // ctxprof.ProfilerCounters: the sums over both exporters.
    writer_inputs.upload_counts = [started] {
      std::pair<uint64_t, uint64_t> counts{0, 0};
      for (const std::unique_ptr<Uploader>& uploader : *started) {
        counts.first += uploader->uploaded();
        counts.second += uploader->dropped();
      }
      return counts;
    };
  }
  if (JdkRecorder* jdk = inputs.jdk_recorder; jdk != nullptr && !options.repository.empty()) {
    writer_inputs.request_period_boundary = [jdk] { jdk->RequestPeriodBoundary(); };
    writer_inputs.period_boundary = [jdk] { return jdk->PeriodBoundary(); };
    writer_inputs.end_period = [jdk](const std::string& path, bool last) {
      jdk->EndPeriodInto(path, last);
    };
    recording->period_sync_ = true;
  }
  if (ContextMap* map = ContextMap::Global(); map != nullptr) {
    recording->spans_ = std::make_unique<SpanDrain>(map, inputs.clock);
    SpanDrain* spans = recording->spans_.get();
    writer_inputs.dropped_spans = [spans] { return spans->dropped(); };
  }
  StatusOr<std::unique_ptr<JfrWriter>> writer = JfrWriter::Open(config, writer_inputs);
  if (!writer.ok()) {
    return writer.status().Prefixed(
        "option '" + std::string(options.file.empty() ? "repository" : "file") + "'");
  }
  recording->writer_ = std::move(writer.value());
  recording->clock_ = inputs.clock;
  recording->reorder_window_ticks_ = static_cast<uint64_t>(
      static_cast<long double>(kReorderWindowNanos) * inputs.clock->TicksPerSecond() / 1e9L);
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

Status Recording::error() const {
  std::lock_guard<std::mutex> lock(error_mutex_);
  return error_;
}

void Recording::Fail(const Status& error) {
  {
    std::lock_guard<std::mutex> lock(error_mutex_);
    if (error_.ok()) error_ = error;
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
    if (writer_ == nullptr) {
      Discard(record);
    } else if (Status added = writer_->Add(record); !added.ok()) {
      Fail(added);
    }
  });
}

void Recording::DrainSpans() {
  if (spans_ == nullptr || writer_ == nullptr) return;
  std::unordered_set<int32_t> timed;
  spans_->Drain([this](const SpanInterval& span) { writer_->AddSpan(span); }, &timed,
                [this](const SpanDrain::OpenInterval& open) {
                  writer_->SetOpenSpan(open.tid, open.virtual_thread_id, open.begin_ticks,
                                       open.read_ticks, open.context);
                });
  writer_->AddTimedThreads(timed);
}

void Recording::EndPeriodIfDue(uint64_t horizon) {
  const uint64_t boundary = writer_ != nullptr ? writer_->PollBoundary() : 0;
  if (boundary == 0 || horizon < boundary) return;
  WriteUpTo(boundary - 1, nullptr);
  if (writer_ == nullptr) return;
  writer_->SettleSpans(boundary);
  if (Status ended = writer_->EndPeriod(); !ended.ok()) Fail(ended);
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
    EndPeriodIfDue(now - reorder_window_ticks_);
    // jfrsync= with repository=: nothing past the coming period boundary joins this chunk.
    const uint64_t horizon = std::min(now - reorder_window_ticks_,
                                      writer_ != nullptr ? writer_->HorizonLimit() : UINT64_MAX);
    WriteUpTo(horizon, &drain);
    if (writer_ != nullptr) writer_->SettleSpans(horizon);
  }
  drain();
  if (writer_ != nullptr) {
    if (Status ticked = writer_->Tick(); !ticked.ok()) Fail(ticked);
  }
  PublishProgress();
}

StatusOr<std::vector<JfrChunkWriter::Published>> Recording::Publish() {
  if (period_sync_ && writer_ != nullptr) {
    // jfrsync= with repository=: the chunk ends where the JDK's recorder rotates now (a dump
    // waits for it), and the records after that stay for the next chunk.
    if (Status asked = writer_->Rotate(); !asked.ok()) Fail(asked);
    for (int waited = 0; writer_ != nullptr && writer_->boundary_under_way() &&
                         writer_->PollBoundary() == 0 && waited < kDumpBoundaryWaitMillis;
         waited += 10) {
      usleep(10 * 1000);
    }
    if (writer_ != nullptr && writer_->PollBoundary() != 0) {
      DrainSpans();
      EndPeriodIfDue(UINT64_MAX);
      if (writer_ == nullptr) return error();
      PublishProgress();
      return writer_->published();
    }
  }
  const uint64_t now = clock_->Now();
  DrainSpans();
  WriteUpTo(UINT64_MAX, nullptr);
  if (writer_ != nullptr && now > reorder_window_ticks_) {
    writer_->SettleSpans(now - reorder_window_ticks_);
  }
  if (writer_ != nullptr) {
    if (Status published = writer_->Publish(); !published.ok()) Fail(published);
  }
  if (writer_ == nullptr) {
    return failed() ? error() : Status::WrongState("the recording is closed");
  }
  PublishProgress();
  return writer_->published();
}

std::vector<pid_t> Recording::own_threads() const {
  std::vector<pid_t> threads;
  for (const std::unique_ptr<Uploader>& uploader : uploaders_) threads.push_back(uploader->tid());
  return threads;
}

Status Recording::Close() {
  DrainSpans();
  WriteUpTo(UINT64_MAX, nullptr);
  if (writer_ != nullptr && spans_ != nullptr) {
    spans_->DrainOpen([this](const SpanInterval& span) { writer_->AddSpan(span); });
    writer_->SettleSpans(UINT64_MAX);
  }
  if (writer_ != nullptr) {
    if (Status closed = writer_->Close(); closed.ok()) {
      ReleaseWriter();
    } else {
      Fail(closed);
    }
  }
  // Both started before either is waited for: upload= and otlp= share one bound.
  for (const std::unique_ptr<Uploader>& uploader : uploaders_) {
    uploader->BeginStop(Uploader::kDefaultBound);
  }
  for (const std::unique_ptr<Uploader>& uploader : uploaders_) uploader->AwaitStop();
  return failed() ? error() : Status();
}

}  // namespace ctxprof
