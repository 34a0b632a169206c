#include "jni/control_command.h"

#include <algorithm>

#include "ctxprof_version.h"

namespace ctxprof {
namespace {

std::string StatusText(const SessionStats& stats) {
  std::string text = stats.running ? "running" : "not running";
  text += "; engine=" + (stats.cpu_engine.empty() ? std::string("none") : stats.cpu_engine);
  if (stats.wall) text += "+wall";
  text += "; samples=" + std::to_string(stats.consumed);
  text += "; drops=" + std::to_string(stats.dropped);
  // Ticks the wall sampler thread woke too late for (a busy CPU): their time is in the next
  // tick's weights, at the stacks of that later moment.
  if (stats.wall) text += "; wall_skipped=" + std::to_string(stats.wall_skipped_ticks);
  text += "; recording=" + (stats.recording.empty() ? std::string("none") : stats.recording);
  if (!stats.recording.empty()) text += "; recorded=" + std::to_string(stats.recorded_samples);
  if (!stats.recording_error.empty()) {
    text += "; recording error: " + stats.recording_error +
            "; nothing more is written to the recording, sampling goes on";
  }
  return text;
}

Status Start(Profiler* profiler, const std::string& options, std::string* answer) {
  std::string notes;
  const Status status = profiler->Start(options, &notes);
  if (status.ok()) *answer = notes.empty() ? "started" : "started; " + notes;
  return status;
}

// dump,file=<path>[,format=jfr|collapsed]
Status Dump(Profiler* profiler, const std::string& args, std::string* answer) {
  std::string path, format_name;
  bool has_format = false;
  size_t start = 0;
  while (start <= args.size()) {
    const size_t comma = std::min(args.find(',', start), args.size());
    const std::string option = args.substr(start, comma - start);
    if (option.rfind("file=", 0) == 0 && path.empty() && option.size() > 5) {
      path = option.substr(5);
    } else if (option.rfind("format=", 0) == 0 && !has_format) {
      format_name = option.substr(7);
      has_format = true;
    } else {
      return Status::InvalidArgument(
          "'" + args +
          "' is not file=<path>[,format=jfr|collapsed]; use dump,file=/path/profile.jfr");
    }
    start = comma + 1;
  }
  if (path.empty()) {
    return Status::InvalidArgument("'" + args + "' names no file; use dump,file=/path/profile.jfr");
  }
  if (has_format && format_name.empty()) {
    return Status::InvalidArgument("format= needs jfr or collapsed");
  }
  const StatusOr<DumpFormat> parsed = ParseDumpFormat(has_format ? format_name : "", path);
  if (!parsed.ok()) {
    return Status::InvalidArgument(parsed.status().message() +
                                   "; use format=jfr or format=collapsed");
  }
  const DumpFormat format = parsed.value();
  const Status status = profiler->Dump(path, format);
  if (status.ok()) {
    *answer =
        (format == DumpFormat::kJfr ? "dumped JFR recording to " : "dumped collapsed stacks to ") +
        path;
  }
  return status;
}

Status Stop(Profiler* profiler, std::string* answer) {
  const Status status = profiler->Stop();
  if (status.ok()) *answer = "stopped; " + StatusText(profiler->Stats());
  return status;
}

}  // namespace

Status RunControlCommand(const std::string& command, std::string* answer) {
  const std::string verb = command.substr(0, command.find(','));
  const std::string args = verb.size() < command.size() ? command.substr(verb.size() + 1) : "";
  Profiler* profiler = Profiler::Global();
  if (verb != "start" && verb != "stop" && verb != "dump" && verb != "status") {
    return Status::InvalidArgument("unknown command '" + verb +
                                   "': use start,<options>, stop, dump,file=<path> or status");
  }
  Status status;
  if (verb == "start") {
    status = Start(profiler, args, answer);
  } else if (verb == "dump") {
    status = Dump(profiler, args, answer);
  } else if (!args.empty()) {
    status = Status::InvalidArgument("takes no arguments, got '" + args + "'");
  } else if (verb == "stop") {
    status = Stop(profiler, answer);
  } else {
    *answer = StatusText(profiler->Stats()) + "; version=" + kCtxprofVersion;
  }
  return status.ok() ? status : status.Prefixed(verb);
}

}  // namespace ctxprof
