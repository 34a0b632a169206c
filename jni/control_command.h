// Control commands: the text commands that drive the process's Profiler from outside C++, with
// one grammar and one set of answers for the Java API (Profiler.execute, jni/java_api.cc) and
// dynamic attach (Agent_OnAttach, jni/attach_command.h).
//
//   start[,<options>]   Profiler::Start (options: profiler/options.h); "started" or
//                       "started; <notes>" (e.g. an engine fallback)
//   stop                Profiler::Stop; "stopped; <status text>"
//   dump,file=<path>    Profiler::Dump (collapsed stacks of the current or last session);
//                       "dumped collapsed stacks to <path>"
//   status              the status text: "running; engine=...; samples=N; drops=N;
//                       recording=<path>; recorded=N" (and the recording's error, if any)
//
// A failure returns its Status with a message that names the command, the input and the fix:
// kInvalidArgument for a malformed command or option, kWrongState for a command that does not
// fit the state (start while running, stop or dump with no session), kIoError when the
// recording or the dump file failed.
//
// Thread safety: as Profiler's control calls (any thread but a signal handler).
#ifndef CTXPROF_JNI_CONTROL_COMMAND_H_
#define CTXPROF_JNI_CONTROL_COMMAND_H_

#include <string>

#include "profiler/profiler.h"

namespace ctxprof {

// Runs `command` on Profiler::Global(); *text is the answer, or the error message.
Status RunControlCommand(const std::string& command, std::string* text);

}  // namespace ctxprof

#endif  // CTXPROF_JNI_CONTROL_COMMAND_H_
