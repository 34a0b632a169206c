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

Status Start(Profiler* profiler, const std::string& options, std::string* text) {
  std::string message;
  const Status status = profiler->Start(options, &message);
  if (status == Status::kWrongState) {
    *text = "start: the profiler is already running; call stop first";
  } else if (status != Status::kOk) {
    *text = "start: " + message;
  } else {
    *text = message.empty() ? "started" : "started; " + message;
  }
  return status;
}

Status Dump(Profiler* profiler, const std::string& args, std::string* text) {
  if (args.rfind("file=", 0) != 0 || args.size() == 5 || args.find(',', 5) != std::string::npos) {
    *text = "dump: '" + args + "' is not file=<path>; use dump,file=/path/profile.txt";
    return Status::kInvalidArgument;
  }
  const std::string path = args.substr(5);
  std::string message;
  const Status status = profiler->Dump(path, &message);
  *text = status == Status::kOk ? "dumped collapsed stacks to " + path : "dump: " + message;
  return status;
}

Status Stop(Profiler* profiler, std::string* text) {
  std::string message;
  const Status status = profiler->Stop(&message);
  if (status == Status::kWrongState) {
    *text = "stop: the profiler is not running; start it with start,<options> first";
  } else if (status != Status::kOk) {
    *text = "stop: " + message;
  } else {
    *text = "stopped; " + StatusText(profiler->Stats());
  }
  return status;
}

}  // namespace

Status RunControlCommand(const std::string& command, std::string* text) {
  const std::string verb = command.substr(0, command.find(','));
  const std::string args = verb.size() < command.size() ? command.substr(verb.size() + 1) : "";
  Profiler* profiler = Profiler::Global();
  if (verb == "start") return Start(profiler, args, text);
  if (verb != "stop" && verb != "dump" && verb != "status") {
    *text = "unknown command '" + verb + "': use start,<options>, stop, dump,file=<path> or status";
    return Status::kInvalidArgument;
  }
  if (verb == "dump") return Dump(profiler, args, text);
  if (!args.empty()) {
    *text = verb + ": takes no arguments, got '" + args + "'";
    return Status::kInvalidArgument;
  }
  if (verb == "stop") return Stop(profiler, text);
  *text = StatusText(profiler->Stats());
  return Status::kOk;
}

}  // namespace ctxprof
