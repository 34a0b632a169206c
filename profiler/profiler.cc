#include "profiler/profiler.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "context/process_context.h"
#include "profiler/recording/recording.h"
#include "profiler/report.h"
#include "profiler/sampler/ctimer_engine.h"
#include "profiler/sampler/itimer_engine.h"
#include "profiler/sampler/perf_engine.h"
#include "profiler/sampler/signal_handler.h"
#include "profiler/sampler/stack_walker.h"
#include "profiler/sampler/tsc_clock.h"
#include "profiler/sampler/wall_engine.h"

namespace ctxprof {

struct Profiler::Session {
  Options options;
  std::unique_ptr<Clock> clock;
  std::unique_ptr<SampleBuffer> buffer;
  std::shared_ptr<Aggregator> sink;
  std::unique_ptr<Recording> recording;  // file= or repository=; else null
  std::unique_ptr<SamplingEngine> cpu_engine;
  std::unique_ptr<WallEngine> wall_engine;
  std::unique_ptr<ThreadRegistry> registry;
  std::thread background;
  std::mutex background_mutex;
  std::condition_variable background_wake;
  RuntimeHooks hooks;     // copied at Start: the background thread reads them unlocked
  bool stopping = false;  // guarded by background_mutex
  bool events = false;    // the runtime's event sources are on (alloc=, lock=)
  pid_t background_tid = 0;
  // Set by the background thread once it printed the recording's error; read by Stats().
  std::atomic<bool> recording_error_reported{false};
};

Profiler* Profiler::Global() {
  static Profiler* const profiler = new Profiler();
  return profiler;
}

namespace {

// The process context store; nullptr (with *error) only if its map could not be reserved.
ProcessContext* Store(std::string* error) { return ProcessContext::Get(error); }

ProcessContext* Store() {
  std::string ignored;
  return ProcessContext::Get(&ignored);
}

// How a recording failure is named, at once (background thread) and at Stop().
std::string RecordingFailure(const std::string& recording, const std::string& error) {
  return "the recording " + recording + " failed: " + error;
}

}  // namespace

const Dictionary* Profiler::dictionary() const {
  ProcessContext* store = Store();
  return store != nullptr ? &store->dictionary() : nullptr;
}

namespace {

std::unique_ptr<SamplingEngine> MakeCpuEngine(CpuEngineKind kind, const Options& options) {
  switch (kind) {
    case CpuEngineKind::kPerf:
      return std::make_unique<PerfEngine>(options.cpu_interval_ns, options.signal);
    case CpuEngineKind::kCpuTimer:
      return std::make_unique<CpuTimerEngine>(options.cpu_interval_ns, options.signal);
    case CpuEngineKind::kITimer:
      return std::make_unique<ITimerEngine>(options.cpu_interval_ns);
    case CpuEngineKind::kNone:
      break;
  }
  return nullptr;
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

MixedStack MixedStackOf(CStackKind cstack) {
  switch (cstack) {
    case CStackKind::kNo:
      return MixedStack::kJavaOnly;
    case CStackKind::kNative:
      return MixedStack::kJavaElseNative;
    case CStackKind::kJavaAndNative:
      return MixedStack::kNativeThenJava;
  }
  return MixedStack::kJavaElseNative;
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

// Starts the requested CPU engine or the first fallback that the system allows. Returns nullptr
// with *error when none could start; appends one note per fallback to *notes.
std::unique_ptr<SamplingEngine> StartCpuEngine(const Options& options, std::string* notes,
                                               std::string* error) {
  std::string reasons;
  for (CpuEngineKind kind = options.cpu_engine; kind != CpuEngineKind::kNone;
       kind = NextFallback(kind)) {
    std::unique_ptr<SamplingEngine> engine = MakeCpuEngine(kind, options);
    std::string reason;
    bool refused = false;
    if (engine->Start(&reason, &refused)) {
      if (!reasons.empty()) {
        *notes += "event: " + reasons + "; sampling CPU with " + engine->name() + " instead. ";
      }
      return engine;
    }
    if (!reasons.empty()) reasons += "; ";
    reasons += std::string(engine->name()) + " refused (" + reason + ")";
    if (!refused) break;
  }
  *error = "event: no CPU sampling engine could start: " + reasons +
           "; check perf_event_paranoid, seccomp and timer limits, or use event=wall";
  return nullptr;
}

}  // namespace

Status Profiler::Start(const std::string& options_text, std::string* message) {
  message->clear();
  Options options;
  if (!ParseOptions(options_text, &options, message)) return Status::kInvalidArgument;
  std::lock_guard<std::mutex> lock(control_mutex_);
  if (session_ != nullptr) {
    *message = "the profiler is already running; call ctxprof_stop() before starting again";
    return Status::kWrongState;
  }
  return StartLocked(options, message) ? Status::kOk : Status::kInvalidArgument;
}

bool Profiler::StartLocked(const Options& options, std::string* message) {
  std::string store_error;
  ProcessContext* store = Store(&store_error);
  if (store == nullptr) {
    *message = "cannot create the context store: " + store_error;
    return false;
  }
  ContextMap* context_map = &store->map();
  if (options.attributes_given && !store->attributes().Register(options.attributes, message)) {
    *message = "option 'attributes': " + *message;
    return false;
  }
  const EventRules event_rules = EventRulesOf(options);
  const bool events = event_rules.alloc_interval_bytes != 0 || event_rules.lock_enabled;
  if ((events && !hooks_.events_start) || (options.live && !hooks_.object_tracker)) {
    *message = std::string("option '") + (options.alloc_interval_bytes != 0 ? "alloc" : "lock") +
               "': allocation and lock events come from the JVM; this process has no JVM agent "
               "(load libctxprof as -agentpath or through io.ctxprof.Profiler)";
    return false;
  }
  std::string error;
  if (!StackWalker::Init(&error) ||
      (options.cpu_engine != CpuEngineKind::kNone &&
       !SignalHandler::Install(options.signal, &error)) ||
      (options.wall_enabled && !SignalHandler::Install(options.wall_signal, &error))) {
    *message = error;
    return false;
  }
  auto session = std::make_unique<Session>();
  session->options = options;
  session->hooks = hooks_;
  std::string notes;
  std::string clock_note;
  session->clock = CreateClock(options.clock, &clock_note);
  if (!clock_note.empty()) notes += clock_note + ". ";
  session->buffer = SampleBuffer::Create(options.buffer_slots, options.depth, message);
  if (session->buffer == nullptr) return false;
  session->sink =
      std::make_shared<Aggregator>(store->attributes().names(), &store->dictionary(),
                                   hooks_.frame_resolver ? hooks_.frame_resolver() : nullptr);
  HandlerSession handler_session{
      session->buffer.get(), session->clock.get(), context_map, options.depth,
      options.unwind == UnwindKind::kFramePointer ? StackWalker::Method::kFramePointer
                                                  : StackWalker::Method::kDwarf};
  handler_session.java_walk = hooks_.java_walk;
  handler_session.mixed = MixedStackOf(options.cstack);
  SignalHandler::Activate(handler_session);

  std::vector<SamplingEngine*> engines;
  if (options.cpu_engine != CpuEngineKind::kNone) {
    session->cpu_engine = StartCpuEngine(options, &notes, message);
    if (session->cpu_engine == nullptr) {
      SignalHandler::Deactivate();
      return false;
    }
    engines.push_back(session->cpu_engine.get());
  }
  if (options.wall_enabled) {
    session->wall_engine = std::make_unique<WallEngine>(
        options.wall_interval_ns, options.wall_signal, options.wall_threads_per_tick,
        options.filter_context, context_map);
    bool refused = false;
    session->wall_engine->Start(&error, &refused);
    engines.push_back(session->wall_engine.get());
  }
  if (!options.file.empty() || !options.repository.empty()) {
    RecordingSettings settings;
    settings.engine = session->cpu_engine != nullptr ? session->cpu_engine->name() : "";
    if (session->wall_engine != nullptr)
      settings.engine += settings.engine.empty() ? "wall" : "+wall";
    settings.interval_nanos =
        session->cpu_engine != nullptr ? options.cpu_interval_ns : options.wall_interval_ns;
    settings.fallbacks = notes;
    SampleBuffer* buffer = session->buffer.get();
    session->recording = Recording::Open(
        options, settings, session->clock.get(), &store->dictionary(), &store->attributes(),
        [buffer] { return buffer->dropped(); },
        hooks_.frame_resolver ? hooks_.frame_resolver() : nullptr,
        hooks_.thread_resolver ? hooks_.thread_resolver() : nullptr,
        events ? EventRecorder::class_names() : nullptr,
        options.live ? hooks_.object_tracker() : nullptr, &error);
  }
  const bool recording_failed =
      (!options.file.empty() || !options.repository.empty()) && session->recording == nullptr;
  if (recording_failed) {
    error = "option '" + std::string(options.file.empty() ? "repository" : "file") + "': " + error;
  } else if (events) {
    EventRecorder::Activate(EventRecorder::Session{session->buffer.get(), session->clock.get(),
                                                   context_map, options.depth, event_rules});
    session->events = hooks_.events_start(event_rules, &error);
    if (!session->events) EventRecorder::Deactivate();
  }
  if (recording_failed || session->events != events) {
    if (session->wall_engine != nullptr) session->wall_engine->Stop();
    if (session->cpu_engine != nullptr) session->cpu_engine->Stop();
    SignalHandler::Deactivate();
    std::string ignored;
    if (session->recording != nullptr) session->recording->Close(&ignored);
    *message = error;
    return false;
  }
  session->registry = std::make_unique<ThreadRegistry>(engines);
  if (session->wall_engine != nullptr) {
    session->registry->Exclude(session->wall_engine->sampler_tid());
  }
  Session* raw = session.get();
  {
    std::unique_lock<std::mutex> background_lock(raw->background_mutex);
    raw->background = std::thread([this, raw] { BackgroundLoop(raw); });
    raw->background_wake.wait(background_lock, [raw] { return raw->background_tid != 0; });
  }
  session->registry->Exclude(raw->background_tid);
  // Arm every existing thread before returning, so sampling covers the caller's next line.
  session->registry->Rescan();
  last_sink_ = session->sink;
  session_ = std::move(session);
  SnapshotStatsLocked();
  while (!notes.empty() && notes.back() == ' ') notes.pop_back();
  *message = notes;
  return true;
}

void Profiler::BackgroundLoop(Session* session) {
  // The OS-level name (top -H, /proc/PID/task/TID/comm, the overhead report's per-thread CPU);
  // without it the thread inherits the name of the thread that started profiling.
  pthread_setname_np(pthread_self(), "ctxprof-writer");
  {
    std::lock_guard<std::mutex> lock(session->background_mutex);
    session->background_tid = static_cast<pid_t>(syscall(SYS_gettid));
  }
  session->background_wake.notify_all();
  if (session->hooks.background_start) session->hooks.background_start();
  while (true) {
    DrainSamples(session);
    if (session->recording != nullptr) {
      session->recording->Tick();
      ReportRecordingFailure(session);
    }
    session->registry->RescanIfChanged();
    std::unique_lock<std::mutex> lock(session->background_mutex);
    if (session->background_wake.wait_for(lock, kDrainInterval,
                                          [session] { return session->stopping; })) {
      break;
    }
  }
  if (session->hooks.background_end) session->hooks.background_end();
}

void Profiler::ReportRecordingFailure(Session* session) {
  if (session->recording_error_reported.load(std::memory_order_relaxed) ||
      !session->recording->failed()) {
    return;
  }
  const Options& options = session->options;
  PrintLine(RecordingFailure(options.file.empty() ? options.repository : options.file,
                             session->recording->error()) +
            "; sampling goes on, but nothing more is written to this recording");
  session->recording_error_reported.store(true, std::memory_order_relaxed);
}

void Profiler::SetRuntimeHooks(RuntimeHooks hooks) {
  std::lock_guard<std::mutex> lock(control_mutex_);
  hooks_ = std::move(hooks);
}

void Profiler::SnapshotStatsLocked() {
  Session* session = session_.get();
  SessionStats stats;
  stats.running = true;
  stats.cpu_engine = session->cpu_engine != nullptr ? session->cpu_engine->name() : "";
  stats.wall = session->wall_engine != nullptr;
  stats.clock = session->clock->Name();
  stats.consumed = session->buffer->consumed();
  stats.dropped = session->buffer->dropped();
  stats.failed_threads = session->cpu_engine != nullptr ? session->cpu_engine->failed_threads() : 0;
  stats.threads_seen = session->registry->threads_seen();
  stats.wall_signals = session->wall_engine != nullptr ? session->wall_engine->signals_sent() : 0;
  stats.recording =
      session->options.file.empty() ? session->options.repository : session->options.file;
  if (session->recording != nullptr) {
    stats.recorded_samples = session->recording->samples_written();
    stats.recording_error = session->recording->error();
  }
  stats.recording_error_reported = session->recording_error_reported.load();
  last_stats_ = stats;
}

Status Profiler::Stop(std::string* error) {
  std::lock_guard<std::mutex> lock(control_mutex_);
  if (session_ == nullptr) {
    *error = "the profiler is not running; call ctxprof_start() first";
    return Status::kWrongState;
  }
  StopLocked();
  if (!last_stats_.recording_error.empty()) {
    *error = RecordingFailure(last_stats_.recording, last_stats_.recording_error);
    return Status::kIoError;
  }
  return Status::kOk;
}

void Profiler::StopLocked() {
  Session* session = session_.get();
  {
    std::lock_guard<std::mutex> lock(session->background_mutex);
    session->stopping = true;
  }
  session->background_wake.notify_all();
  session->background.join();
  // No new signals after this: per-thread events and timers are closed, wall and itimer stopped.
  session->registry->RemoveAll();
  if (session->wall_engine != nullptr) session->wall_engine->Stop();
  if (session->cpu_engine != nullptr) session->cpu_engine->Stop();
  SignalHandler::Deactivate();
  if (session->events) {
    session->hooks.events_stop();
    EventRecorder::Deactivate();
  }
  DrainSamples(session);
  std::string recording_error;
  if (session->recording != nullptr) session->recording->Close(&recording_error);
  SnapshotStatsLocked();
  last_stats_.running = false;
  last_stats_.recording_error = recording_error;
  session_.reset();
}

void Profiler::DrainSamples(Session* session) {
  Aggregator* sink = session->sink.get();
  Recording* recording = session->recording.get();
  session->buffer->Drain([sink, recording](const SampleRecord& record) {
    sink->Consume(record);
    if (recording != nullptr) recording->Consume(record);
  });
}

Status Profiler::Dump(const std::string& path, std::string* error) {
  std::lock_guard<std::mutex> lock(control_mutex_);
  if (last_sink_ == nullptr) {
    *error =
        "nothing to dump to '" + path + "': no profiling session has run; call ctxprof_start()";
    return Status::kWrongState;
  }
  return last_sink_->WriteCollapsed(path, error) ? Status::kOk : Status::kIoError;
}

Status Profiler::RegisterAttributes(const std::vector<std::string>& names, std::string* error) {
  std::lock_guard<std::mutex> lock(control_mutex_);
  ProcessContext* store = Store(error);
  if (store == nullptr) return Status::kWrongState;
  AttributeRegistry& registry = store->attributes();
  const std::vector<std::string> registered = registry.names();
  for (size_t slot = 0; slot < std::min(names.size(), registered.size()); slot++) {
    if (names[slot] != registered[slot]) {
      std::string list;
      for (const std::string& name : registered) list += (list.empty() ? "" : ", ") + name;
      *error = "attribute slot " + std::to_string(slot) + " is already bound to '" +
               registered[slot] + "', not '" + names[slot] + "' (registered: " + list +
               "); slots never move, so register names in the order used before";
      return Status::kInvalidArgument;
    }
  }
  if (names.size() > registered.size() && session_ != nullptr) {
    *error =
        "new attributes cannot be added while the profiler runs; register them before "
        "ctxprof_start() or pass attributes= in its options";
    return Status::kWrongState;
  }
  return registry.Register(names, error) ? Status::kOk : Status::kInvalidArgument;
}

namespace {

// The calling thread's block; nullptr when the store is unavailable or the tid is beyond the
// map (counted there).
ContextBlock* OwnBlock() {
  ProcessContext* store = Store();
  return store != nullptr ? store->map().BlockFor(CachedTid()) : nullptr;
}

}  // namespace

bool Profiler::SetAttribute(int slot, const char* value, std::string* error) {
  ProcessContext* store = Store(error);
  if (store == nullptr) return false;
  const int registered = store->attributes().size();
  if (slot < 0 || slot >= registered) {
    *error = "attribute slot " + std::to_string(slot) + " is not registered (" +
             std::to_string(registered) +
             " registered); register names with ctxprof_register_attributes() first";
    return false;
  }
  ContextBlock* block = store->map().BlockFor(CachedTid());
  if (block == nullptr) {
    *error = "this thread has no context block (tid beyond the context map's capacity)";
    return false;
  }
  const uint32_t id = value == nullptr ? Dictionary::kUnsetId : store->dictionary().Intern(value);
  BlockWriter(block).SetAttribute(slot, id);
  return true;
}

void Profiler::SetTraceContext(uint64_t trace_high, uint64_t trace_low, uint64_t span_id) {
  ContextBlock* block = OwnBlock();
  if (block == nullptr) return;
  BlockWriter writer(block);
  writer.SetTraceId(trace_high, trace_low);
  writer.SetSpanId(span_id);
}

void Profiler::ClearContext() {
  ContextBlock* block = OwnBlock();
  if (block != nullptr) BlockWriter(block).Clear();
}

void Profiler::OnThreadStart(pid_t tid) {
  std::lock_guard<std::mutex> lock(control_mutex_);
  if (session_ != nullptr) session_->registry->OnThreadStart(tid);
}

void Profiler::OnThreadEnd(pid_t tid) {
  std::lock_guard<std::mutex> lock(control_mutex_);
  if (session_ != nullptr) session_->registry->OnThreadEnd(tid);
}

SessionStats Profiler::Stats() {
  std::lock_guard<std::mutex> lock(control_mutex_);
  if (session_ != nullptr) SnapshotStatsLocked();
  return last_stats_;
}

std::vector<AggregatedStack> Profiler::Stacks() {
  std::shared_ptr<Aggregator> sink;
  std::unique_ptr<Recording> recording;  // file= or repository=; else null
  {
    std::lock_guard<std::mutex> lock(control_mutex_);
    sink = last_sink_;
  }
  return sink != nullptr ? sink->Stacks() : std::vector<AggregatedStack>();
}

AggregatorCounters Profiler::Counters() {
  std::shared_ptr<Aggregator> sink;
  std::unique_ptr<Recording> recording;  // file= or repository=; else null
  {
    std::lock_guard<std::mutex> lock(control_mutex_);
    sink = last_sink_;
  }
  return sink != nullptr ? sink->counters() : AggregatorCounters();
}

}  // namespace ctxprof
