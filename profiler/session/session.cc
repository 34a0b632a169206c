#include "profiler/session/session.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "context/process_context.h"
#include "profiler/notice.h"
#include "profiler/sampler/ctimer_engine.h"
#include "profiler/sampler/itimer_engine.h"
#include "profiler/sampler/perf_engine.h"
#include "profiler/sampler/stack_walker.h"
#include "profiler/sampler/tsc_clock.h"
#include "profiler/symbols/kernel_symbols.h"

namespace ctxprof {

// The signal handler serves the session's buffer, clock and context map while this lives.
class Session::HandlerActivation {
 public:
  explicit HandlerActivation(const HandlerSession& session) { SignalHandler::Activate(session); }
  // Returns when no handler can still be using the session (signal_handler.h).
  ~HandlerActivation() { SignalHandler::Deactivate(); }
  HandlerActivation(const HandlerActivation&) = delete;
  HandlerActivation& operator=(const HandlerActivation&) = delete;
};

// The runtime's event sources (alloc=, lock=) feed the session's buffer while this lives: the
// EventRecorder is active, and the runtime reports allocations and waits to it.
class Session::EventSources {
 public:
  // The EventRecorder is active before the runtime's sources start, so no event they report is
  // lost, and deactivated again when they cannot start.
  static StatusOr<std::unique_ptr<EventSources>> Start(const EventRecorder::Session& session,
                                                       const RuntimeHooks& hooks) {
    EventRecorder::Activate(session);
    const Status started = hooks.events_start(session.rules);
    if (!started.ok()) {
      EventRecorder::Deactivate();
      return started;
    }
    return std::unique_ptr<EventSources>(new EventSources(hooks.events_stop));
  }
  // Returns when no event can still be using the session's buffer (event_recorder.h).
  ~EventSources() {
    if (stop_) stop_();
    EventRecorder::Deactivate();
  }
  EventSources(const EventSources&) = delete;
  EventSources& operator=(const EventSources&) = delete;

 private:
  explicit EventSources(std::function<void()> stop) : stop_(std::move(stop)) {}

  const std::function<void()> stop_;
};

// Runs Session::Tick every kDrainInterval, and at once when the session's doorbell rings (the
// sample buffer passed its high-water mark, a task, the end), between the runtime's
// background_start and background_end hooks, until destroyed.
class Session::BackgroundThread {
 public:
  // Fails with kUnavailable when the thread cannot be created (a thread or memory limit).
  // Returns once the thread runs and knows its tid.
  static StatusOr<std::unique_ptr<BackgroundThread>> Start(Session* session) {
    std::unique_ptr<BackgroundThread> background(new BackgroundThread(session));
    BackgroundThread* raw = background.get();
    std::unique_lock<std::mutex> lock(raw->mutex_);
    try {
      raw->thread_ = std::thread([raw] { raw->Run(); });
    } catch (const std::system_error& e) {
      return Status::Unavailable(std::string("cannot create the profiler's background thread: ") +
                                     strerror(e.code().value()) +
                                     "; raise the process's thread limit",
                                 e.code().value());
    }
    raw->wake_.wait(lock, [raw] { return raw->tid_ != 0; });
    return background;
  }

  // Wakes the thread and waits until it has finished its last tick and background_end.
  ~BackgroundThread() {
    if (!thread_.joinable()) return;  // its creation failed
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    session_->doorbell_.Ring();
    thread_.join();
  }
  BackgroundThread(const BackgroundThread&) = delete;
  BackgroundThread& operator=(const BackgroundThread&) = delete;

  pid_t tid() {
    std::lock_guard<std::mutex> lock(mutex_);
    return tid_;
  }

  // Runs `task` on the thread right after waking it, and returns once it ran.
  void RunTask(const std::function<void()>& task) {
    std::unique_lock<std::mutex> lock(mutex_);
    task_ = &task;
    task_done_ = false;
    session_->doorbell_.Ring();
    wake_.wait(lock, [this] { return task_done_; });
  }

 private:
  explicit BackgroundThread(Session* session) : session_(session) {}

  void Run() {
    // The OS-level name (top -H, /proc/PID/task/TID/comm, the overhead report's per-thread
    // CPU); without it the thread inherits the name of the thread that started profiling.
    pthread_setname_np(pthread_self(), "ctxprof-writer");
    {
      std::lock_guard<std::mutex> lock(mutex_);
      tid_ = static_cast<pid_t>(syscall(SYS_gettid));
    }
    wake_.notify_all();
    const RuntimeHooks& hooks = session_->hooks_;
    if (hooks.background_start) hooks.background_start();
    Doorbell& doorbell = session_->doorbell_;
    while (true) {
      // Read before the work: a ring during it (the buffer filled up again while the recording
      // wrote) makes the Wait below return at once (doorbell.h).
      const uint32_t seen = doorbell.sequence();
      session_->Tick();
      if (!RunTaskUnlessStopping()) break;
      doorbell.Wait(seen, kDrainInterval);
    }
    if (hooks.background_end) hooks.background_end();
  }

  // Runs the task RunTask handed over, if any; false when the thread must stop.
  bool RunTaskUnlessStopping() {
    std::unique_lock<std::mutex> lock(mutex_);
    if (task_ != nullptr) {
      const std::function<void()>* task = task_;
      lock.unlock();
      (*task)();
      lock.lock();
      task_ = nullptr;
      task_done_ = true;
      wake_.notify_all();
    }
    return !stopping_;
  }

  Session* const session_;
  std::mutex mutex_;
  std::condition_variable wake_;                 // the thread's tid is known, a task is done
  bool stopping_ = false;                        // guarded by mutex_
  pid_t tid_ = 0;                                // guarded by mutex_
  const std::function<void()>* task_ = nullptr;  // guarded by mutex_
  bool task_done_ = false;                       // guarded by mutex_
  std::thread thread_;
};

namespace {

// How a recording failure is named, at once (background thread) and at Stop().
std::string RecordingFailure(const std::string& recording, const std::string& error) {
  return "the recording " + recording + " failed: " + error;
}

std::unique_ptr<SamplingEngine> MakeCpuEngine(CpuEngineKind kind, const Options& options,
                                              bool kernel_frames) {
  switch (kind) {
    case CpuEngineKind::kPerf:
      return std::make_unique<PerfEngine>(options.cpu_interval_ns, options.signal, kernel_frames);
    case CpuEngineKind::kCpuTimer:
      return std::make_unique<CpuTimerEngine>(options.cpu_interval_ns, options.signal);
    case CpuEngineKind::kITimer:
      return std::make_unique<ITimerEngine>(options.cpu_interval_ns);
    case CpuEngineKind::kNone:
      break;
  }
  return nullptr;
}

MixedStack MixedStackOf(CStackKind cstack) {
  switch (cstack) {
    case CStackKind::kNo:
      return MixedStack::kJavaOnly;
    case CStackKind::kNative:
      return MixedStack::kJavaElseNative;
    case CStackKind::kMixed:
      return MixedStack::kMixed;
  }
  return MixedStack::kMixed;
}

bool WantsEvents(const Options& options) {
  return options.alloc_interval_bytes != 0 || options.lock_enabled;
}

EventRules EventRulesOf(const Options& options) {
  EventRules rules;
  rules.alloc_interval_bytes = options.alloc_interval_bytes;
  rules.lock_enabled = options.lock_enabled;
  rules.lock_threshold_ns = options.lock_threshold_ns;
  rules.if_context = options.select == EventSelect::kIfContext;
  rules.live = options.live;
  return rules;
}

// alloc=, lock= and live need a runtime that reports events (the JVM agent).
Status CheckEventSources(const Options& options, const RuntimeHooks& hooks) {
  if ((WantsEvents(options) && !hooks.events_start) || (options.live && !hooks.object_tracker)) {
    return Status::InvalidArgument(
        std::string("option '") + (options.alloc_interval_bytes != 0 ? "alloc" : "lock") +
        "': allocation and lock events come from the JVM; this process has no JVM agent (load "
        "libctxprof as -agentpath or through io.ctxprof.Profiler)");
  }
  return Status();
}

StackWalker::Method WalkerMethodOf(UnwindKind unwind) {
  switch (unwind) {
    case UnwindKind::kDwarf:
      return StackWalker::Method::kDwarf;
    case UnwindKind::kLibunwind:
      return StackWalker::Method::kLibunwind;
    case UnwindKind::kFramePointer:
      return StackWalker::Method::kFramePointer;
  }
  return StackWalker::Method::kDwarf;
}

CpuEngineKind NextFallback(CpuEngineKind kind) {
  switch (kind) {
    case CpuEngineKind::kPerf:
      return CpuEngineKind::kCpuTimer;
    case CpuEngineKind::kCpuTimer:
      return CpuEngineKind::kITimer;
    default:
      return CpuEngineKind::kNone;
  }
}

// Starts the requested CPU engine or the first fallback that the system allows, appending one
// note per fallback to *notes. When none starts: kUnavailable listing every refusal, with the
// errno of the last one.
StatusOr<std::unique_ptr<SamplingEngine>> StartCpuEngine(const Options& options,
                                                         bool kernel_frames_wanted,
                                                         std::string* notes) {
  // Kernel frames only with names for them: the cpu engine records none when /proc/kallsyms
  // hides its addresses from us.
  const bool perf_kernel_frames =
      kernel_frames_wanted && options.cpu_engine == CpuEngineKind::kPerf;
  const Status kallsyms = perf_kernel_frames ? KernelSymbols::CheckAddressesVisible() : Status();
  const bool kernel_frames = perf_kernel_frames && kallsyms.ok();
  std::string reasons;
  int last_error = 0;
  for (CpuEngineKind kind = options.cpu_engine; kind != CpuEngineKind::kNone;
       kind = NextFallback(kind)) {
    std::unique_ptr<SamplingEngine> engine = MakeCpuEngine(kind, options, kernel_frames);
    bool refused = false;
    const Status started = engine->Start(&refused);
    if (started.ok()) {
      if (!reasons.empty()) {
        *notes += "event: " + reasons + "; sampling CPU with " + engine->name() + " instead. ";
      }
      std::string kernel_off = engine->kernel_frames_off();
      if (kernel_off.empty() && !kallsyms.ok() && kind == CpuEngineKind::kPerf) {
        kernel_off = "kernel frames off: " + kallsyms.message();
      }
      if (!kernel_off.empty()) *notes += kernel_off + ". ";
      return engine;
    }
    if (!reasons.empty()) reasons += "; ";
    reasons += std::string(engine->name()) + " refused (" + started.message() + ")";
    last_error = started.os_error();
    if (!refused) break;
  }
  return Status::Unavailable("event: no CPU sampling engine could start: " + reasons +
                                 "; check perf_event_paranoid, seccomp and timer limits, or use "
                                 "event=wall",
                             last_error);
}

}  // namespace

Session::Session(const Options& options, const RuntimeHooks& hooks)
    : options_(options), hooks_(hooks) {}

Session::~Session() = default;

StatusOr<std::unique_ptr<Session>> Session::Start(const Options& options, const RuntimeHooks& hooks,
                                                  std::string* notes, JdkRecorder* jdk_recorder) {
  notes->clear();
  std::string error;
  ProcessContext* store = ProcessContext::Get(&error);
  if (store == nullptr) {
    return Status::Unavailable("cannot create the context store: " + error, 0);
  }
  if (options.attributes_given && !store->attributes().Register(options.attributes, &error)) {
    return Status::InvalidArgument("option 'attributes': " + error);
  }
  const Status event_sources = CheckEventSources(options, hooks);
  if (!event_sources.ok()) return event_sources;
  // Process-wide and never undone (a queued signal must always find our handler).
  Status installed = StackWalker::Init(WalkerMethodOf(options.unwind));
  if (installed.ok() && options.cpu_engine != CpuEngineKind::kNone) {
    installed = SignalHandler::Install(options.signal);
  }
  if (installed.ok() && options.wall_enabled)
    installed = SignalHandler::Install(options.wall_signal);
  if (!installed.ok()) return installed;

  std::unique_ptr<Session> session(new Session(options, hooks));
  std::string clock_note;
  session->clock_ = options.clock_origin_nanos != 0
                        ? std::make_unique<MonotonicClock>(options.clock_origin_nanos)
                        : CreateClock(options.clock, &clock_note);
  if (!clock_note.empty()) *notes += clock_note + ". ";
  StatusOr<std::unique_ptr<SampleBuffer>> buffer =
      SampleBuffer::Create(options.buffer_slots, options.depth, &session->doorbell_);
  if (!buffer.ok()) return buffer.status();
  session->buffer_ = std::move(buffer.value());
  session->aggregator_ =
      std::make_shared<Aggregator>(store->attributes().names(), &store->dictionary(),
                                   hooks.frame_resolver ? hooks.frame_resolver() : nullptr);

  HandlerSession handler_session{session->buffer_.get(), session->clock_.get(), &store->map(),
                                 options.depth, WalkerMethodOf(options.unwind)};
  handler_session.java_walk = hooks.java_walk;
  handler_session.virtual_thread = hooks.virtual_thread;
  handler_session.java_code = hooks.java_code;
  handler_session.mixed = MixedStackOf(options.cstack);
  if (options.wall_enabled) {
    session->wall_witnesses_ = std::make_unique<WallWitnessTable>();
    handler_session.wall_witnesses = session->wall_witnesses_.get();
  }
  session->activation_ = std::make_unique<HandlerActivation>(handler_session);

  std::vector<SamplingEngine*> engines;
  if (options.cpu_engine != CpuEngineKind::kNone) {
    // cstack=no in a JVM means Java frames only, kernel ones included (async-profiler's
    // meaning too); outside a JVM cstack= does not apply.
    const bool kernel_frames =
        options.kernel_frames && (options.cstack != CStackKind::kNo || hooks.java_walk == nullptr);
    StatusOr<std::unique_ptr<SamplingEngine>> cpu_engine =
        StartCpuEngine(options, kernel_frames, notes);
    if (!cpu_engine.ok()) return cpu_engine.status();
    session->cpu_engine_ = std::move(cpu_engine.value());
    engines.push_back(session->cpu_engine_.get());
    // Kernel frames come with nearly every CPU sample, and a recording names them as it writes:
    // from a table read now, on the starting thread (docs/SAMPLER.md, "Symbolizer"), not at
    // the first one on the background thread, which under load gets a small share of a CPU and
    // would drain nothing for seconds. (Without a recording only a dump names frames, on the
    // thread that asks for it.)
    if (kernel_frames && !session->recording_path().empty() &&
        session->cpu_engine_->kind() == Engine::kPerfCpuClock &&
        session->cpu_engine_->kernel_frames_off().empty() &&
        KernelSymbols::CheckAddressesVisible().ok()) {
      session->kernel_symbols_ = KernelSymbols::Shared();
    }
  }
  if (options.wall_enabled) {
    session->wall_engine_ = std::make_unique<WallEngine>(
        options.wall_interval_ns, options.wall_signal, options.wall_threads_per_tick,
        options.filter_context, &store->map(), session->buffer_.get(), session->clock_.get(),
        session->wall_witnesses_.get());
    bool refused = false;
    const Status started = session->wall_engine_->Start(&refused);
    if (!started.ok()) return started;
    engines.push_back(session->wall_engine_.get());
  }

  if (!session->recording_path().empty()) {
    RecordingSettings settings;
    settings.engine = session->cpu_engine_ != nullptr ? session->cpu_engine_->name() : "";
    if (session->wall_engine_ != nullptr) {
      settings.engine += settings.engine.empty() ? "wall" : "+wall";
    }
    settings.interval_nanos = session->cpu_engine_ != nullptr    ? options.cpu_interval_ns
                              : session->wall_engine_ != nullptr ? options.wall_interval_ns
                                                                 : 0;
    settings.fallbacks = *notes;
    // upload=: the credentials it names are read now; a missing one is a bad option.
    UploaderConfig upload;
    if (!options.upload.url.empty()) {
      StatusOr<UploaderConfig> read = UploaderConfigFromOptions(options);
      if (!read.ok()) return read.status();
      upload = std::move(read.value());
    }
    // otlp=: the OTEL_EXPORTER_OTLP_* variables are read now.
    UploaderConfig otlp;
    if (!options.otlp.url.empty()) {
      StatusOr<UploaderConfig> read = OtlpConfigFromOptions(options);
      if (!read.ok()) return read.status();
      otlp = std::move(read.value());
    }
    SampleBuffer* raw_buffer = session->buffer_.get();
    RecordingInputs inputs;
    inputs.settings = settings;
    inputs.clock = session->clock_.get();
    inputs.dictionary = &store->dictionary();
    inputs.attributes = &store->attributes();
    inputs.dropped_samples = [raw_buffer] { return raw_buffer->dropped(); };
    if (hooks.frame_resolver) inputs.frames = hooks.frame_resolver();
    if (hooks.thread_resolver) inputs.threads = hooks.thread_resolver();
    if (WantsEvents(options)) inputs.class_names = EventRecorder::class_names();
    if (options.live) inputs.objects = hooks.object_tracker();
    inputs.downstream = session->aggregator_.get();
    if (!options.upload.url.empty()) inputs.upload = &upload;
    if (!options.otlp.url.empty()) inputs.otlp = &otlp;
    inputs.jdk_recorder = jdk_recorder;
    StatusOr<std::unique_ptr<Recording>> recording = Recording::Open(options, std::move(inputs));
    if (!recording.ok()) return recording.status();  // names the option
    session->recording_ = std::move(recording.value());
  }

  // The option parser made alloc= and lock= require a recording: their events go only there.
  if (WantsEvents(options)) {
    StatusOr<std::unique_ptr<EventSources>> events = EventSources::Start(
        EventRecorder::Session{session->buffer_.get(), session->clock_.get(), &store->map(),
                               options.depth, EventRulesOf(options)},
        hooks);
    if (!events.ok()) return events.status();
    session->events_ = std::move(events.value());
  }

  session->registry_ = std::make_unique<ThreadRegistry>(engines, hooks.reports_threads);
  if (session->wall_engine_ != nullptr) {
    session->registry_->Exclude(session->wall_engine_->sampler_tid());
  }
  StatusOr<std::unique_ptr<BackgroundThread>> background = BackgroundThread::Start(session.get());
  if (!background.ok()) return background.status();
  session->background_ = std::move(background.value());
  session->registry_->Exclude(session->background_->tid());
  if (session->recording_ != nullptr) {
    for (pid_t tid : session->recording_->own_threads()) session->registry_->Exclude(tid);
  }
  if (jdk_recorder != nullptr && jdk_recorder->worker_tid() != 0) {
    session->registry_->Exclude(jdk_recorder->worker_tid());
  }
  // Arm every existing thread before returning, so sampling covers the caller's next line.
  session->registry_->Rescan();
  while (!notes->empty() && notes->back() == ' ') notes->pop_back();
  return session;
}

Status Session::Stop() {
  background_.reset();
  // No new signals after this: per-thread events and timers are closed, wall and itimer stopped.
  registry_->RemoveAll();
  if (wall_engine_ != nullptr) wall_engine_->Stop();
  if (cpu_engine_ != nullptr) cpu_engine_->Stop();
  activation_.reset();
  events_.reset();
  DrainSamples();
  stopped_ = true;
  if (recording_ == nullptr) return Status();
  const Status closed = recording_->Close();
  if (closed.ok()) return closed;
  return Status::Io(RecordingFailure(recording_path(), closed.message()), closed.os_error());
}

Status Session::PublishRecording(PublishedFiles* files) {
  if (recording_ == nullptr || recording_->failed()) {
    return Status::WrongState("the session has no working recording");
  }
  Status status;
  background_->RunTask([this, files, &status] {
    DrainSamples();
    StatusOr<std::vector<JfrChunkWriter::Published>> published = recording_->Publish();
    if (!published.ok()) {
      status = Status::Io(RecordingFailure(recording_path(), published.status().message()),
                          published.status().os_error());
      return;
    }
    status = files->Open(published.value());  // here: retention runs on this thread only
  });
  return status;
}

void Session::Tick() {
  // The drain and the thread check first: they are cheap and what keeps samples from being
  // dropped and new threads from going unsampled; the recording's work (symbolizing new
  // frames, encoding, writing) can take long when the thread gets little CPU (session.h).
  DrainUnlessBehind();
  // A thread gone quiet for a minute has exited (an idle one gets a repeat every second). Looked
  // for once a second, not at every tick: it scans every thread's entry.
  const uint64_t now = clock_->Now();
  const uint64_t second = clock_->TicksPerSecond();
  if (now > 60 * second && now - last_forget_ >= second) {
    wall_repeats_.Forget(now - 60 * second);
    last_forget_ = now;
  }
  registry_->RescanIfChanged();
  if (recording_ != nullptr) {
    // A rescan that arms a burst of new threads takes milliseconds of CPU, stretched by as much
    // as the thread's share of a CPU is small: drain again before writing, and while writing.
    DrainUnlessBehind();
    recording_->Tick([this] { DrainUnlessBehind(); });
    ReportRecordingFailure();
  }
  if (options_.unwind == UnwindKind::kDwarf) StackWalker::RefreshTables();
}

void Session::DrainSamples() {
  Aggregator* aggregator = aggregator_.get();
  Recording* recording = recording_.get();
  buffer_->Drain([this, aggregator, recording](const SampleRecord& record) {
    // With a recording the aggregator gets the sample from it (Recording::Open): the drain
    // only copies it into the recording's reorderer.
    wall_repeats_.Expand(record, [aggregator, recording](const SampleRecord& sample) {
      if (recording != nullptr) {
        recording->Consume(sample);
      } else {
        aggregator->Consume(sample);
      }
    });
  });
}

void Session::DrainUnlessBehind() {
  // Past a buffer's worth of records waiting to be written the recording is behind for longer
  // than a burst: leave the samples in the buffer, whose fill the wall engine's backpressure
  // reads, so that the records held stay bounded (session.h, "Draining").
  if (recording_ == nullptr || recording_->backlog() < buffer_->slots()) DrainSamples();
}

void Session::ReportRecordingFailure() {
  if (recording_error_reported_.load(std::memory_order_relaxed) || !recording_->failed()) return;
  PrintNotice(RecordingFailure(recording_path(), recording_->error().message()) +
              "; sampling goes on, but nothing more is written to this recording");
  recording_error_reported_.store(true, std::memory_order_relaxed);
}

const std::string& Session::recording_path() const {
  return options_.file.empty() ? options_.repository : options_.file;
}

SessionStats Session::Stats() const {
  SessionStats stats;
  stats.running = !stopped_;
  stats.cpu_engine = cpu_engine_ != nullptr ? cpu_engine_->name() : "";
  stats.wall = wall_engine_ != nullptr;
  stats.clock = clock_->Name();
  stats.consumed = buffer_->consumed();
  stats.dropped = buffer_->dropped();
  stats.peak_drain = buffer_->peak_drain();
  stats.failed_threads = cpu_engine_ != nullptr ? cpu_engine_->failed_threads() : 0;
  stats.threads_seen = registry_->threads_seen();
  stats.wall_signals = wall_engine_ != nullptr ? wall_engine_->signals_sent() : 0;
  stats.wall_intervals = wall_engine_ != nullptr ? wall_engine_->intervals_accounted() : 0;
  stats.wall_throttled_ticks = wall_engine_ != nullptr ? wall_engine_->throttled_ticks() : 0;
  stats.wall_skipped_ticks = wall_engine_ != nullptr ? wall_engine_->skipped_ticks() : 0;
  stats.recording = recording_path();
  if (recording_ != nullptr) {
    stats.recorded_samples = recording_->samples_written();
    stats.recording_error = recording_->error().message();
  }
  stats.recording_error_reported = recording_error_reported_.load();
  return stats;
}

}  // namespace ctxprof
