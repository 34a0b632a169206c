// `ctxprof attach PID start|stop|dump|status [options]`: drives libctxprof inside a running JVM
// through HotSpot's dynamic attach (tools/hotspot_attach.h). Each action is one "load" of the
// library whose options are one control command of the agent (jni/attach_command.h):
//
//   start [record's agent flags] [-o FILE]   "start,<key=value,...>,file=<FILE>"
//   stop                                     "stop"
//   dump -o FILE                             "dump,file=<FILE>"
//   status                                   "status"
//
// followed by ",reply=<file>": a fresh name in the JVM's /tmp where the agent writes its answer,
// which is read (through /proc/PID/root for a JVM in another mount namespace), printed and
// deleted. The library is the one the JVM already has mapped, if any (a second copy would be a
// second profiler); --lib naming another one is refused. FILE and the library are made
// absolute against our working directory (the agent runs in the JVM's); for a JVM in a
// container they are paths inside the container. `start` takes the flags of `record` through
// the same translation (tools/record.h), default -o ctxprof.jfr.
//
// Exit status: 0 when the agent answered ok (its answer on stdout), 1 when it refused or failed
// (its message on stderr) or the attach failed, 2 for a usage error.
#ifndef CTXPROF_TOOLS_ATTACH_H_
#define CTXPROF_TOOLS_ATTACH_H_

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "tools/record.h"

namespace ctxprof::tools {

struct AttachArguments {
  pid_t pid = 0;
  std::string action;                        // start, stop, dump or status
  RecordOptions agent;                       // --lib; -o (start, dump); the agent keys (start)
  std::chrono::milliseconds timeout{10000};  // --timeout: wait for the JVM's attach listener
};

// Parses the arguments after "attach". False + *error (a usage error) for a bad pid or action,
// an unknown flag or one the action does not take, a missing value, or dump without -o.
bool ParseAttachArguments(const std::vector<std::string>& args, AttachArguments* out,
                          std::string* error);

// The agent command for `arguments` without the reply option; relative -o paths are joined to
// `cwd`. False + *error for a value the agent could not split (see AgentOptionString).
bool AttachCommandString(const AttachArguments& arguments, const std::string& cwd, std::string* out,
                         std::string* error);

// Runs the action; `executable` locates libctxprof.so when --lib is not given. Prints the
// agent's answer and returns the exit status described above.
int RunAttach(const AttachArguments& arguments, const std::string& executable);

}  // namespace ctxprof::tools

#endif  // CTXPROF_TOOLS_ATTACH_H_
