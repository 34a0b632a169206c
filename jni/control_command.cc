#include "jni/control_command.h"

namespace ctxprof {
namespace {

std::string StatusText(const SessionStats& stats) {
  std::string text = stats.running ? "running" : "not running";
  text += "; engine=" + (stats.cpu_engine.empty() ? std::string("none") : stats.cpu_engine);
  if (stats.wall) text += "+wall";
  text += "; samples=" + std::to_string(stats.consumed);
  text += "; drops=" + std::to_string(stats.dropped);
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

Status Dump(Profiler* profiler, const std::string& args, std::string* answer) {
  if (args.rfind("file=", 0) != 0 || args.size() == 5 || args.find(',', 5) != std::string::npos) {
    return Status::InvalidArgument("'" + args +
                                   "' is not file=<path>; use dump,file=/path/profile.txt");
  }
  const std::string path = args.substr(5);
  const Status status = profiler->Dump(path);
  if (status.ok()) *answer = "dumped collapsed stacks to " + path;
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
    *answer = StatusText(profiler->Stats());
  }
  return status.ok() ? status : status.Prefixed(verb);
}

}  // namespace ctxprof
