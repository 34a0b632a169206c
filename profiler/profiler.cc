#include "profiler/profiler.h"

#include <algorithm>

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

Status Profiler::Start(const std::string& options_text, std::string* notes) {
  notes->clear();
  StatusOr<Options> parsed = ParseOptions(options_text);
  if (!parsed.ok()) return parsed.status();
  const Options& options = parsed.value();
  std::lock_guard<std::mutex> lock(control_mutex_);
  if (session_ != nullptr) {
    return Status::WrongState(
        "the profiler is already running; stop the running session before starting another");
  }
  if (options.otel_context) {
    // Before the session: its attributes= registration then republishes the key map.
    std::string error;
    ProcessContext* store = ProcessContext::Get(&error);
    if (store == nullptr || !store->PublishOtel(OtelResourceAttributes("otelcontext"), &error)) {
      return Status::Unavailable("option 'otelcontext': " + error, 0);
    }
  }
  StatusOr<std::unique_ptr<Session>> started = Session::Start(options, hooks_, notes);
  if (!started.ok()) return started.status();
  session_ = std::move(started.value());
  last_aggregator_ = session_->aggregator();
  last_stats_ = session_->Stats();
  return Status();
}

Status Profiler::Stop() {
  std::lock_guard<std::mutex> lock(control_mutex_);
  if (session_ == nullptr) {
    return Status::WrongState("the profiler is not running; start a session first");
  }
  const Status stopped = session_->Stop();
  last_stats_ = session_->Stats();
  session_.reset();
  return stopped;
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
  {
    std::lock_guard<std::mutex> lock(control_mutex_);
    if (last_aggregator_ == nullptr) {
      return Status::WrongState("nothing to dump to '" + path +
                                "': no profiling session has run; start one first");
    }
    aggregator = last_aggregator_;
    // A failed or empty publication leaves the aggregated samples to dump.
    if (format == DumpFormat::kJfr && session_ != nullptr) session_->PublishRecording(&recording);
    if (format == DumpFormat::kJfr && recording.bytes() == 0 && hooks_.frame_resolver) {
      frames = hooks_.frame_resolver();
    }
  }
  // Symbolizing and copying take a while: outside the control mutex.
  if (format == DumpFormat::kCollapsed) return aggregator->WriteCollapsed(path);
  if (recording.bytes() > 0) return CopyRecording(recording, path);
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
