// AttachCommand: Agent_OnAttach. A dynamic attach (`ctxprof attach`, `jcmd PID
// JVMTI.agent_load`, VirtualMachine.loadAgentPath) loads libctxprof into a running JVM and calls
// Agent_OnAttach with one options string; every later load of the same path calls it again in
// the already loaded library. Each call runs one control command (control_command.h):
//
//   <command>[,reply=<path>]        e.g. "start,event=cpu,file=/tmp/app.jfr,reply=/tmp/x"
//
// The answer reaches the attaching client two ways:
//  * Agent_OnAttach's return value, which HotSpot puts into its reply to "load" as
//    "return code: N": 0 ok, 1 malformed command or option, 2 the command
//    does not fit the state (start while running, stop with no session), 3 I/O error, 4 the
//    agent could not set up JVMTI, 5 the system refused what start asks for (perf events,
//    timers, a signal another handler owns, memory, a thread).
//  * the answer's text. With reply=<path> (the last option; the path runs to the end of the
//    string), it is written to that file in the JVM's file system: created exclusively, mode
//    0600, never through a symlink; the client reads and deletes it. Without reply= (e.g. jcmd)
//    it is printed on the JVM's stderr as "ctxprof: <text>". Why not the attach connection
//    itself: docs/JAVA.md ("The JVM agent").
//
// Before answering, the library pins itself in memory (dlopen RTLD_NODELETE of its own file):
// HotSpot dlcloses an agent whose Agent_OnAttach returned non-zero, and the JVMTI callbacks an
// earlier load installed must stay valid.
//
// Thread safety: runs on the JVM's attach listener thread, one request at a time; the control
// command itself is serialised by the Profiler.
#ifndef CTXPROF_JNI_ATTACH_COMMAND_H_
#define CTXPROF_JNI_ATTACH_COMMAND_H_

#include <jni.h>

namespace ctxprof {

class AttachCommand {
 public:
  // Agent_OnAttach's return codes (HotSpot's "return code: N").
  static constexpr jint kOk = 0;
  static constexpr jint kInvalidArgument = 1;
  static constexpr jint kWrongState = 2;
  static constexpr jint kIoError = 3;
  static constexpr jint kNoJvmti = 4;
  static constexpr jint kUnavailable = 5;

  // Runs the command in `options` (may be null) and answers it as described above.
  static jint Run(JavaVM* vm, const char* options);
};

}  // namespace ctxprof

#endif  // CTXPROF_JNI_ATTACH_COMMAND_H_
