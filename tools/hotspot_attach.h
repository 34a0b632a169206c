// HotSpot's dynamic attach, client side, on Linux: run one attach operation ("load") in a
// running JVM and read its reply. No JDK tool is involved.
//
// The protocol (JDK 17, 21, 25; version 1, which every one of them accepts):
//  1. The JVM listens on the UNIX socket <tmp>/.java_pid<pid> once its attach listener runs.
//     It starts the listener on SIGQUIT when a file .attach_pid<pid> exists in its working
//     directory or in <tmp>. <tmp> is the JVM's /tmp; <pid> is the JVM's pid in its own pid
//     namespace.
//  2. The client connects and writes "1\0<operation>\0<arg0>\0<arg1>\0<arg2>\0": exactly three
//     arguments of at most 1024 bytes each (longer ones make the JVM drop the connection).
//  3. The JVM writes "<status>\n<output>" and closes. For "load" (arg0 = the agent library,
//     arg1 = "true" for an absolute path, arg2 = the agent's options) the output is
//     "return code: <Agent_OnAttach's return value>" when it ran the agent, or the reason it
//     could not load the library (status -1 on JDK 17, 0 on JDK 21+).
//
// Targets in another pid or mount namespace (containers), as async-profiler's jattach does,
// except that it does not setns(): every path is reached through the target's own root,
// /proc/<pid>/root (the JVM's /tmp, which a private /tmp or a container makes different from
// ours), the trigger goes into /proc/<pid>/cwd, the file names use the pid the JVM sees (the last
// field of NSpid in /proc/<pid>/status) and the signal the host pid. Without setns no
// capability beyond access to /proc/<pid> is needed; a pathname socket can be connected to
// from any network namespace.
//
// Credentials: the JVM accepts a connection only from its own effective uid and gid, or root,
// and a trigger file only if owned by its uid or root. In a container with a user namespace
// the host's root is not root to the JVM, so a root client takes the JVM's effective gid and
// uid (setegid, then seteuid) before it touches any file, like jattach. A non-root client with
// another uid is refused with a message before anything is sent.
//
// Safety of the target: SIGQUIT is sent only when the socket is absent and /proc/<pid>/status
// shows SIGQUIT caught (SigCgt); otherwise (not a JVM, a JVM with -Xrs, a JVM still starting)
// the default action would kill or stop it, so the client refuses instead. The trigger file
// is removed afterwards.
//
// Failure modes, each an error naming the pid and the fix: no such process; another user;
// SIGQUIT not caught; no socket after the timeout (the wait polls every 20 ms, doubling up to
// 500 ms); connect/write/read errors (with errno); no reply within kReplyTimeout; an argument
// over 1024 bytes. SIGPIPE is never raised (MSG_NOSIGNAL).
#ifndef CTXPROF_TOOLS_HOTSPOT_ATTACH_H_
#define CTXPROF_TOOLS_HOTSPOT_ATTACH_H_

#include <sys/types.h>

#include <chrono>
#include <string>

namespace ctxprof::tools {

struct AttachTarget {
  pid_t pid = 0;     // the pid we see: kill(), /proc/<pid>
  pid_t ns_pid = 0;  // the pid the JVM sees: its socket and trigger names
  uid_t uid = 0;     // the JVM's effective uid and gid
  gid_t gid = 0;
  std::string root;  // "" (same mount namespace) or "/proc/<pid>/root": prefix of its paths
};

// Reads /proc/<pid>: ids, namespace pid, mount namespace. False + *error if there is no such
// process or its status cannot be read.
bool FindAttachTarget(pid_t pid, AttachTarget* out, std::string* error);

// Takes the target's effective gid and uid when we are root and they differ; refuses (false +
// *error) when we are not root and our effective uid differs. Process-wide: call it once, before
// any file of the target is touched.
bool ActAsTargetUser(const AttachTarget& target, std::string* error);

// The JVM's answer to one operation.
struct AttachReply {
  int status = 0;      // first line: 0 = the operation ran
  std::string output;  // the rest, as the JVM sent it
};

// The JVM's answer must arrive within this time once the request is sent.
constexpr std::chrono::seconds kReplyTimeout{120};

// Runs `operation` with up to three arguments, starting the attach listener if it is not
// running and waiting at most `listener_timeout` for its socket.
bool RunAttachOperation(const AttachTarget& target, const std::string& operation,
                        const std::string& arg0, const std::string& arg1, const std::string& arg2,
                        std::chrono::milliseconds listener_timeout, AttachReply* reply,
                        std::string* error);

// "load" of the agent at the absolute path `library` with `options`. True when the JVM ran its
// Agent_OnAttach: *agent_code is the value it returned. False + *error when the attach failed or
// the JVM could not load the library (its own message is in *error).
bool LoadAgent(const AttachTarget& target, const std::string& library, const std::string& options,
               std::chrono::milliseconds listener_timeout, int* agent_code, std::string* error);

}  // namespace ctxprof::tools

#endif  // CTXPROF_TOOLS_HOTSPOT_ATTACH_H_
