#include "profiler/profiler.h"

#include <algorithm>
#include <cstdio>

#include "context/process_context.h"
#include "profiler/export/otlp_exporter.h"
#include "profiler/options.h"
#include "profiler/sampler/tsc_clock.h"
#include "profiler/session/recording_dump.h"
#include "profiler/symbols/native_resolvers.h"

namespace ctxprof {

Profiler* Profiler::Global() {
  static Profiler* const profiler = new Profiler();
  return profiler;
}

namespace {

Status AlreadyRunning() {
  return Status::WrongState(
      "the profiler is already running; stop the running session before starting another");
}

// jfrsync=: the JDK's recorder, or null with *note saying why the session goes on without it.
// Runs without the profiler's lock (RuntimeHooks::jdk_recorder).
StatusOr<std::unique_ptr<JdkRecorder>> StartJdkRecorder(const Options& options,
                                                        const RuntimeHooks& hooks,
                                                        std::string* note) {
  if (!hooks.jdk_recorder) {
    return Status::InvalidArgument(
        "option 'jfrsync': value '" + options.jfrsync +
        "' needs a JVM (the JDK's Flight Recorder); remove it to profile this process");
  }
  JdkRecorderRequest request;
  request.config = options.jfrsync;
  request.file = options.file;
  request.repository = options.repository;
  request.samples = options.cpu_engine != CpuEngineKind::kNone || options.wall_enabled;
  request.allocations = options.alloc_interval_bytes != 0;
  request.locks = options.lock_enabled;
  request.select_if_context = options.select == EventSelect::kIfContext;
  request.triggered_contexts = options.jfrsync_triggered_contexts;
  request.threshold_given = options.jfrsync_threshold_given;
  request.threshold_nanos = options.jfrsync_threshold_ns;
  StatusOr<std::unique_ptr<JdkRecorder>> started = hooks.jdk_recorder(request);
  if (started.ok()) return started;
  *note = "jfrsync=" + options.jfrsync + ": " + started.status().message() +
          "; recording without the JDK's events";
  return std::unique_ptr<JdkRecorder>();
}

}  // namespace

Status Profiler::Start(const std::string& options_text, std::string* notes) {
  notes->clear();
  StatusOr<Options> parsed = ParseOptions(options_text);
  if (!parsed.ok()) return parsed.status();
  Options options = parsed.value();
  std::unique_ptr<JdkRecorder> jdk_recorder;  // destroyed, if not kept, after the lock
  std::string jdk_note;
  if (!options.jfrsync.empty()) {
    RuntimeHooks hooks;
    {
      std::lock_guard<std::mutex> lock(control_mutex_);
      if (session_ != nullptr) return AlreadyRunning();
      hooks = hooks_;
    }
    StatusOr<std::unique_ptr<JdkRecorder>> started = StartJdkRecorder(options, hooks, &jdk_note);
    if (!started.ok()) return started.status();
    jdk_recorder = std::move(started.value());
    if (jdk_recorder != nullptr)
      options.clock_origin_nanos = jdk_recorder->monotonic_origin_nanos();
  }
  std::lock_guard<std::mutex> lock(control_mutex_);
  if (session_ != nullptr) return AlreadyRunning();
  if (options.otel_context) {
    // Before the session: its attributes= registration then republishes the key map.
    std::string error;
    ProcessContext* store = ProcessContext::Get(&error);
    if (store == nullptr || !store->PublishOtel(OtelResourceAttributes("otelcontext"), &error)) {
      return Status::Unavailable("option 'otelcontext': " + error, 0);
    }
  }
  StatusOr<std::unique_ptr<Session>> started =
      Session::Start(options, hooks_, notes, jdk_recorder.get());
  if (!started.ok()) return started.status();
  if (!jdk_note.empty()) *notes += (notes->empty() ? "" : " ") + jdk_note;
  session_ = std::move(started.value());
  jdk_recorder_ = std::move(jdk_recorder);
  last_aggregator_ = session_->aggregator();
  last_stats_ = session_->Stats();
  return Status();
}

Status Profiler::Stop() {
  std::shared_ptr<JdkRecorder> jdk_recorder;
  std::string file;
  Status stopped;
  {
    std::lock_guard<std::mutex> lock(control_mutex_);
    if (session_ == nullptr) {
      return Status::WrongState("the profiler is not running; start a session first");
    }
    stopped = session_->Stop();
    last_stats_ = session_->Stats();
    session_.reset();
    jdk_recorder = std::move(jdk_recorder_);
    file = last_stats_.recording;
  }
  // The JDK's chunks follow ours once our file is finished; without the lock (see Start).
  if (jdk_recorder == nullptr || !stopped.ok()) return stopped;
  return jdk_recorder->StopInto(file);
}

StatusOr<DumpFormat> ParseDumpFormat(const std::string& name, const std::string& path) {
  auto ends_with = [&path](const std::string& suffix) {
    return path.size() >= suffix.size() &&
           path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (name == "jfr" || (name.empty() && !ends_with(".txt") && !ends_with(".collapsed"))) {
    return DumpFormat::kJfr;
  }
  if (name == "collapsed" || name.empty()) return DumpFormat::kCollapsed;
  return Status::InvalidArgument("format '" + name + "' is not jfr or collapsed");
}

Status Profiler::Dump(const std::string& path, DumpFormat format) {
  std::shared_ptr<Aggregator> aggregator;
  PublishedFiles recording;
  std::unique_ptr<FrameResolver> frames;
  std::shared_ptr<JdkRecorder> jdk_recorder;
  {
    std::lock_guard<std::mutex> lock(control_mutex_);
    if (last_aggregator_ == nullptr) {
      return Status::WrongState("nothing to dump to '" + path +
                                "': no profiling session has run; start one first");
    }
    aggregator = last_aggregator_;
    // A failed or empty publication leaves the aggregated samples to dump.
    if (format == DumpFormat::kJfr && session_ != nullptr) session_->PublishRecording(&recording);
    jdk_recorder = jdk_recorder_;
    if (format == DumpFormat::kJfr && recording.bytes() == 0 && hooks_.frame_resolver) {
      frames = hooks_.frame_resolver();
    }
  }
  // Symbolizing and copying take a while: outside the control mutex.
  if (format == DumpFormat::kCollapsed) return aggregator->WriteCollapsed(path);
  if (recording.bytes() > 0) {
    const Status copied =
        CopyRecording(recording, path, jdk_recorder == nullptr || !jdk_recorder->per_chunk());
    if (!copied.ok() || jdk_recorder == nullptr) return copied;
    return jdk_recorder->SnapshotInto(path);  // jfrsync=: the JDK's events so far follow
  }
  if (frames == nullptr) frames = std::make_unique<NativeFrameResolver>();
  std::string error;
  ProcessContext* store = ProcessContext::Get(&error);
  if (store == nullptr) return Status::Unavailable("cannot reach the context store: " + error, 0);
  std::string clock_note;
  const std::unique_ptr<Clock> clock = CreateClock(ClockKind::kMonotonic, &clock_note);
  AggregateDumpInputs inputs;
  inputs.clock = clock.get();
  inputs.frames = frames.get();
  inputs.dictionary = &store->dictionary();
  inputs.attributes = &store->attributes();
  return WriteAggregateJfr(aggregator.get(), inputs, path);
}

Status Profiler::RegisterAttributes(const std::vector<std::string>& names) {
  std::lock_guard<std::mutex> lock(control_mutex_);
  std::string error;
  ProcessContext* store = ProcessContext::Get(&error);
  if (store == nullptr) return Status::Unavailable("cannot create the context store: " + error, 0);
  AttributeRegistry& registry = store->attributes();
  const std::vector<std::string> registered = registry.names();
  for (size_t slot = 0; slot < std::min(names.size(), registered.size()); slot++) {
    if (names[slot] != registered[slot]) {
      std::string list;
      for (const std::string& name : registered) list += (list.empty() ? "" : ", ") + name;
      return Status::InvalidArgument(
          "attribute slot " + std::to_string(slot) + " is already bound to '" + registered[slot] +
          "', not '" + names[slot] + "' (registered: " + list +
          "); slots never move, so register names in the order used before");
    }
  }
  if (names.size() > registered.size() && session_ != nullptr) {
    return Status::WrongState(
        "new attributes cannot be added while the profiler runs; register them before starting "
        "a session, or list them in the start option attributes=");
  }
  if (!registry.Register(names, &error)) return Status::InvalidArgument(error);
  return Status();
}

void Profiler::ReportUnrecordedAttributes() {
  std::lock_guard<std::mutex> lock(control_mutex_);
  if (session_ == nullptr) return;
  std::string error;
  ProcessContext* store = ProcessContext::Get(&error);
  if (store == nullptr) return;
  const std::vector<std::string> registered = store->attributes().names();
  const size_t recorded = session_->aggregator()->attribute_names().size();
  for (size_t slot = std::max(recorded, unrecorded_reported_); slot < registered.size(); slot++) {
    fprintf(stderr,
            "ctxprof: attribute '%s' was registered after the running session started: its "
            "recording has it from its next chunk on, and a collapsed dump names it slot%zu; "
            "list it in the start option attributes= (e.g. attributes=%s) to have it from the "
            "start\n",
            registered[slot].c_str(), slot, registered[slot].c_str());
  }
  unrecorded_reported_ = std::max(unrecorded_reported_, registered.size());
}

void Profiler::SetRuntimeHooks(RuntimeHooks hooks) {
  std::lock_guard<std::mutex> lock(control_mutex_);
  hooks_ = std::move(hooks);
}

void Profiler::OnThreadStart(pid_t tid) {
  std::lock_guard<std::mutex> lock(control_mutex_);
  if (session_ != nullptr) session_->OnThreadStart(tid);
}

void Profiler::OnThreadEnd(pid_t tid) {
  std::lock_guard<std::mutex> lock(control_mutex_);
  if (session_ != nullptr) session_->OnThreadEnd(tid);
}

SessionStats Profiler::Stats() {
  std::lock_guard<std::mutex> lock(control_mutex_);
  if (session_ != nullptr) last_stats_ = session_->Stats();
  return last_stats_;
}

std::shared_ptr<Aggregator> Profiler::LastAggregator() {
  std::lock_guard<std::mutex> lock(control_mutex_);
  return last_aggregator_;
}

std::vector<AggregatedStack> Profiler::Stacks() {
  // Symbolizing may take a while: done outside the control mutex.
  std::shared_ptr<Aggregator> aggregator = LastAggregator();
  return aggregator != nullptr ? aggregator->Stacks() : std::vector<AggregatedStack>();
}

AggregatorCounters Profiler::Counters() {
  std::shared_ptr<Aggregator> aggregator = LastAggregator();
  return aggregator != nullptr ? aggregator->counters() : AggregatorCounters();
}

}  // namespace ctxprof
