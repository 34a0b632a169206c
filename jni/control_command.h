// Control commands: the text commands that drive the process's Profiler from outside C++, with
// one grammar and one set of answers for the Java API (Profiler.execute, jni/java_api.cc) and
// dynamic attach (Agent_OnAttach, jni/attach_command.h).
//
//   start[,<options>]   Profiler::Start (options: profiler/options.h); "started" or
//                       "started; <notes>" (e.g. an engine fallback)
//   stop                Profiler::Stop; "stopped; <status text>"
//   dump,file=<path>[,format=jfr|collapsed]
//                       Profiler::Dump: what the current (or last) session recorded so far, as
//                       JFR, or as collapsed stacks when format=collapsed or the path ends in
//                       .txt or .collapsed; "dumped JFR recording to <path>" or "dumped
//                       collapsed stacks to <path>"
//   status              the status text: "running; engine=...; samples=N; drops=N;
//                       recording=<path>; recorded=N" (and the recording's error, if any)
//
// A failure returns the profiler's Status (profiler/base/status.h) with the command in front of its
// message ("start: option 'file': cannot create recording file /x/y.jfr: No such file or
// directory (create the folder first)"): kInvalidArgument for a malformed command or option,
// kWrongState for a command that does not fit the state (start while running, stop or dump
// with no session), kIo when the recording or the dump file failed (with the OS error),
// kUnavailable when the system refused what start asks for.
//
// Thread safety: as Profiler's control calls (any thread but a signal handler).
#ifndef CTXPROF_JNI_CONTROL_COMMAND_H_
#define CTXPROF_JNI_CONTROL_COMMAND_H_

#include <string>

#include "profiler/base/status.h"
#include "profiler/profiler.h"

namespace ctxprof {

// Runs `command` on Profiler::Global(); on success *answer is the answer.
Status RunControlCommand(const std::string& command, std::string* answer);

}  // namespace ctxprof

#endif  // CTXPROF_JNI_CONTROL_COMMAND_H_
