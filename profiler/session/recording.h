// Recording: the SampleSink that writes a session's samples as JFR (file= or repository=).
//
// It owns the JFR writer and the resolvers it names frames and threads with, and isolates the
// session from I/O failure: the first write error (disk full, folder deleted, file size limit)
// is kept as the recording's error and later samples are no longer written, while sampling and
// the in-memory aggregation go on. Everything the writer finished before the error stays valid;
// the chunk in progress keeps a header that marks it unfinished (docs/JFR.md). The session's
// background thread prints that error once when it sees failed() after a Tick()
// (Session::ReportRecordingFailure, session.h).
//
// With upload= (repository mode) it also owns the Uploader: each finished chunk file goes to
// its queue, and Close() gives the last ones Uploader::kDefaultBound to be sent.
//
// Thread safety: Open() runs on the thread that starts the session; Consume/Tick/Close come
// from the session's background thread, or from the stopping thread after the background thread
// has been joined. failed(), error() and samples_written() may be called from any thread at any
// time (a session's status is read while its background thread writes).
#ifndef CTXPROF_PROFILER_SESSION_RECORDING_H_
#define CTXPROF_PROFILER_SESSION_RECORDING_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "context/attribute_registry.h"
#include "context/dictionary.h"
#include "profiler/base/status.h"
#include "profiler/export/otlp_exporter.h"
#include "profiler/export/uploader.h"
#include "profiler/jfr_events/jfr_writer.h"
#include "profiler/jfr_events/live_objects.h"
#include "profiler/options.h"
#include "profiler/sampler/clock.h"
#include "profiler/session/jdk_recorder.h"
#include "profiler/session/sample_reorderer.h"
#include "profiler/session/sample_sink.h"
#include "profiler/session/span_drain.h"
#include "profiler/symbols/native_resolvers.h"

namespace ctxprof {

// What the recording says about the session that produced it (ctxprof.ProfilerSettings).
struct RecordingSettings {
  std::string engine;  // the engines really running, e.g. "cpu+wall"; "" with event=alloc|lock
  uint64_t interval_nanos = 0;  // the CPU interval, else the wall interval, else 0
  std::string fallbacks;        // notes about engine fallbacks; may be empty
};

// What a recording is made of besides its options (Recording::Open).
struct RecordingInputs {
  RecordingSettings settings;
  const Clock* clock = nullptr;                   // required; outlives the recording
  const Dictionary* dictionary = nullptr;         // required; context values
  const AttributeRegistry* attributes = nullptr;  // required; attribute names
  std::function<uint64_t()> dropped_samples;      // the sampler's drops so far; may be empty
  // Name frames and threads (the JVM layer's resolvers); null means the native resolvers.
  std::unique_ptr<FrameResolver> frames;
  std::unique_ptr<ThreadResolver> threads;
  // Names the classes of runtime events (profiler/sampler/event_recorder.h); may be null when
  // there are none.
  const Dictionary* class_names = nullptr;
  // The live option's (else null): owns the object references allocation records carry. The
  // writer reports the live ones at the end, and references of records never written (after a
  // failure) are released here.
  std::unique_ptr<ObjectTracker> objects;
  // The session's aggregator (may be null; must outlive the recording): gets every consumed
  // record too. When the writer takes it, in tick order, which keeps Consume a copy into the
  // reorderer (see Tick); after a failure, at once (and what the reorderer still held, at the
  // next Tick).
  SampleSink* downstream = nullptr;
  // upload=: UploaderConfigFromOptions' result; null = none.
  const UploaderConfig* upload = nullptr;
  // otlp=: OtlpConfigFromOptions' result; null = none.
  const UploaderConfig* otlp = nullptr;
  // jfrsync= with repository=: the JDK's recorder whose events of each chunk's period the
  // chunk file also carries (JfrWriterInputs::request_period_boundary); null = none. Must
  // outlive the recording.
  JdkRecorder* jdk_recorder = nullptr;
};

class Recording : public SampleSink {
 public:
  // Opens the JFR file or repository named by `options` (one of them must be set), and with
  // inputs.upload and inputs.otlp start the uploaders. Fails with a Status naming the option and
  // the path or file at fault: kIo with the errno of the failed file or folder call; the uploader's
  // own failure (Uploader::Start) as it is.
  static StatusOr<std::unique_ptr<Recording>> Open(const Options& options, RecordingInputs inputs);

  // Samples are held back for kReorderWindowNanos and reach the writer in tick order
  // (sample_reorderer.h).
  static constexpr uint64_t kReorderWindowNanos = 50 * 1000 * 1000;

  void Consume(const SampleRecord& record) override;
  // Periodic work: hands the samples older than the reorder window to the writer, flushes on
  // the flush interval, rotates on chunktime=. Call it after each drain. `drain` is called
  // every kRecordsBetweenDrains records written and before the flush: the session drains its
  // sample buffer there (into Consume, which may be called from inside it), so that a long
  // write, stretched by a thread that gets little CPU, does not leave the buffer to fill up.
  void Tick(const std::function<void()>& drain);
  // A fraction of the shortest scheduler slice of the writer's CPU (docs/SAMPLER.md, "The
  // background thread's profile").
  static constexpr uint32_t kRecordsBetweenDrains = 128;
  // jfrsync= with repository=: how long a dump waits for the JDK's recorder to rotate.
  static constexpr int kDumpBoundaryWaitMillis = 10000;
  // Finishes the recording. Fails with the first failure when the recording failed at any point.
  Status Close();
  // For a dump: writes every sample consumed so far, held ones included, and publishes them
  // (JfrWriter::Publish); returns what readers can read. Fails (and the recording failed) on a
  // write error, or with the first failure when it had failed before.
  StatusOr<std::vector<JfrChunkWriter::Published>> Publish();

  // Records consumed and not written yet (the reorderer's).
  size_t backlog() const { return reorderer_.held(); }

  bool failed() const { return failed_.load(std::memory_order_acquire); }
  // The first failure (ok while none).
  Status error() const;
  // Samples and runtime events written so far, as of the last Tick() or Close().
  uint64_t samples_written() const { return samples_written_.load(std::memory_order_relaxed); }
  // Threads of the recording's own (the uploaders'), which the session must never sample.
  std::vector<pid_t> own_threads() const;

 private:
  Recording() = default;
  void Fail(const Status& error);
  void ReleaseWriter();
  void PublishProgress();
  // Writes the held samples with ticks <= horizon; calls `drain` (when not null) every
  // kRecordsBetweenDrains of them.
  void WriteUpTo(uint64_t horizon, const std::function<void()>* drain);
  // Hands the spans closed since the last call to the writer (SpanDrain).
  void DrainSpans();
  // jfrsync= with repository=: when the writer waits for a period boundary at or before
  // `horizon`, writes the records before it and ends the chunk there (JfrWriter::EndPeriod).
  void EndPeriodIfDue(uint64_t horizon);
  // A record that will not be written: gives back its object reference, if any.
  void Discard(const SampleRecord& record);

  std::unique_ptr<FrameResolver> frames_;
  std::unique_ptr<ThreadResolver> threads_;
  std::unique_ptr<ObjectTracker> objects_;  // may be null
  SampleSink* downstream_ = nullptr;        // may be null
  const Clock* clock_ = nullptr;
  uint64_t reorder_window_ticks_ = 0;
  SampleReorderer reorderer_;
  std::unique_ptr<SpanDrain> spans_;  // null when the process has no context map
  bool period_sync_ = false;          // inputs.jdk_recorder with repository=
  // Before writer_: the writer reports finished chunks to it until the writer is destroyed.
  // upload= and otlp=, in that order (either may be absent).
  std::vector<std::unique_ptr<Uploader>> uploaders_;
  std::unique_ptr<JfrWriter> writer_;  // null after a failure or Close()
  // What other threads may read.
  mutable std::mutex error_mutex_;
  Status error_;  // the first failure; guarded by error_mutex_
  std::atomic<bool> failed_{false};
  std::atomic<uint64_t> samples_written_{0};
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SESSION_RECORDING_H_
