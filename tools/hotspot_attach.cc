#include "tools/hotspot_attach.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

namespace ctxprof::tools {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxArgument = 1024;  // HotSpot's limit per argument in protocol version 1

std::string Errno() { return strerror(errno); }

std::string Pid(pid_t pid) { return std::to_string(pid); }

// The fields of /proc/<pid>/status that attach needs.
struct ProcessStatus {
  std::string uid, gid, ns_pid, caught_signals;
};

bool ReadStatus(pid_t pid, ProcessStatus* out, std::string* error) {
  const std::string path = "/proc/" + Pid(pid) + "/status";
  std::ifstream file(path);
  if (!file) {
    *error = "no process " + Pid(pid) + " (" + path + ": " + Errno() + ")";
    return false;
  }
  std::string line;
  while (std::getline(file, line)) {
    std::istringstream fields(line);
    std::string key, value;
    fields >> key;
    std::vector<std::string> values;
    while (fields >> value) values.push_back(value);
    if (values.empty()) continue;
    if (key == "Uid:" && values.size() > 1) out->uid = values[1];  // real, effective, ...
    if (key == "Gid:" && values.size() > 1) out->gid = values[1];
    if (key == "NSpid:") out->ns_pid = values.back();  // innermost namespace
    if (key == "SigCgt:") out->caught_signals = values[0];
  }
  if (out->uid.empty() || out->gid.empty()) {
    *error = path + " has no Uid:/Gid: lines";
    return false;
  }
  return true;
}

bool IsSocket(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISSOCK(info.st_mode);
}

bool IsAlive(pid_t pid) { return kill(pid, 0) == 0 || errno == EPERM; }

constexpr std::chrono::milliseconds kSigquitPatience{2000};

bool CatchesSigquit(pid_t pid) {
  ProcessStatus status;
  std::string ignored;
  if (!ReadStatus(pid, &status, &ignored) || status.caught_signals.empty()) return false;
  const unsigned long long mask = strtoull(status.caught_signals.c_str(), nullptr, 16);
  return (mask >> (SIGQUIT - 1)) & 1;
}

std::string SocketPath(const AttachTarget& target) {
  return target.root + "/tmp/.java_pid" + Pid(target.ns_pid);
}

// Creates the trigger in the JVM's working directory, else in its /tmp; returns its path, or
// "" with *error.
std::string CreateTrigger(const AttachTarget& target, std::string* error) {
  const std::string name = "/.attach_pid" + Pid(target.ns_pid);
  const std::string places[] = {"/proc/" + Pid(target.pid) + "/cwd" + name,
                                target.root + "/tmp" + name};
  std::string reasons;
  for (const std::string& path : places) {
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0660);
    if (fd >= 0) {
      close(fd);
      return path;
    }
    reasons += (reasons.empty() ? "" : "; ") + path + ": " + Errno();
  }
  *error = "cannot create the attach trigger file (" + reasons + ")";
  return "";
}

// Makes the JVM start its attach listener and waits for the socket.
bool StartListener(const AttachTarget& target, std::chrono::milliseconds timeout,
                   std::string* error) {
  const std::string pid = Pid(target.pid);
  // A JVM that has just started may run Java code before it catches SIGQUIT: give it a moment
  // (at most the timeout, in 50 ms steps) rather than refuse it.
  const auto patience = std::chrono::steady_clock::now() + std::min(timeout, kSigquitPatience);
  while (!CatchesSigquit(target.pid) && std::chrono::steady_clock::now() < patience) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!CatchesSigquit(target.pid)) {
    *error = "process " + pid +
             " has no attach socket and does not catch SIGQUIT (not a JVM, a JVM run with -Xrs, "
             "or one still starting); not sending SIGQUIT, which would end it";
    return false;
  }
  const std::string trigger = CreateTrigger(target, error);
  if (trigger.empty()) return false;
  bool ready = false;
  if (kill(target.pid, SIGQUIT) != 0) {
    *error = "cannot send SIGQUIT to process " + pid + ": " + Errno();
  } else {
    const Clock::time_point deadline = Clock::now() + timeout;
    std::chrono::milliseconds pause{20};
    while (!(ready = IsSocket(SocketPath(target)))) {
      if (!IsAlive(target.pid)) {
        *error = "process " + pid + " exited while its attach listener was starting";
        break;
      }
      if (Clock::now() >= deadline) {
        *error = "process " + pid + " did not open " + SocketPath(target) + " within " +
                 std::to_string(timeout.count()) +
                 " ms of SIGQUIT (is it a HotSpot JVM? try a longer --timeout)";
        break;
      }
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::milliseconds(500));
    }
  }
  unlink(trigger.c_str());
  return ready;
}

// Connected socket, or -1 with *error and errno set by socket() or connect().
int Connect(const std::string& path, std::string* error) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof(address.sun_path)) {
    *error = "socket path " + path + " is too long for a UNIX socket";
    return -1;
  }
  memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = "socket: " + Errno();
    return -1;
  }
  if (connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    const int connect_errno = errno;
    *error = "cannot connect to " + path + ": " + Errno();
    close(fd);
    errno = connect_errno;
    return -1;
  }
  return fd;
}

bool SendAll(int fd, const std::string& bytes, std::string* error) {
  for (size_t sent = 0; sent < bytes.size();) {
    const ssize_t n = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *error = "sending the request: " + Errno();
      return false;
    }
    sent += static_cast<size_t>(n);
  }
  return true;
}

// Everything until the JVM closes the connection, within kReplyTimeout.
bool ReceiveAll(int fd, std::string* out, std::string* error) {
  const Clock::time_point deadline = Clock::now() + kReplyTimeout;
  char buffer[4096];
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd watch{fd, POLLIN, 0};
    const int ready = left > 0 ? poll(&watch, 1, static_cast<int>(left)) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      *error = "no reply from the JVM within " + std::to_string(kReplyTimeout.count()) + " s";
      return false;
    }
    const ssize_t n = ready < 0 ? -1 : read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *error = "reading the reply: " + Errno();
      return false;
    }
    if (n == 0) return true;
    out->append(buffer, static_cast<size_t>(n));
  }
}

}  // namespace

bool FindAttachTarget(pid_t pid, AttachTarget* out, std::string* error) {
  ProcessStatus status;
  if (pid <= 0) {
    *error = "no process " + Pid(pid);
    return false;
  }
  if (!ReadStatus(pid, &status, error)) return false;
  out->pid = pid;
  out->uid = static_cast<uid_t>(std::stoul(status.uid));
  out->gid = static_cast<gid_t>(std::stoul(status.gid));
  out->ns_pid = status.ns_pid.empty() ? pid : static_cast<pid_t>(std::stol(status.ns_pid));
  const std::string proc = "/proc/" + Pid(pid);
  // An unreadable namespace link means no access to /proc/<pid>/root either: use our paths.
  struct stat ours, theirs;
  const bool other_mount_namespace = stat("/proc/self/ns/mnt", &ours) == 0 &&
                                     stat((proc + "/ns/mnt").c_str(), &theirs) == 0 &&
                                     ours.st_ino != theirs.st_ino;
  out->root = other_mount_namespace ? proc + "/root" : "";
  return true;
}

bool ActAsTargetUser(const AttachTarget& target, std::string* error) {
  if (geteuid() != 0 && geteuid() != target.uid) {
    *error = "process " + Pid(target.pid) + " runs as uid " + std::to_string(target.uid) +
             " and you are uid " + std::to_string(geteuid()) +
             "; run ctxprof attach as that user or as root";
    return false;
  }
  // The gid first: after seteuid to a non-root uid, setegid is no longer allowed.
  if ((getegid() != target.gid && setegid(target.gid) != 0) ||
      (geteuid() != target.uid && seteuid(target.uid) != 0)) {
    *error = "cannot take process " + Pid(target.pid) + "'s uid/gid " + std::to_string(target.uid) +
             "/" + std::to_string(target.gid) + ": " + Errno() +
             "; run ctxprof attach as that user or as root";
    return false;
  }
  return true;
}

bool RunAttachOperation(const AttachTarget& target, const std::string& operation,
                        const std::string& arg0, const std::string& arg1, const std::string& arg2,
                        std::chrono::milliseconds listener_timeout, AttachReply* reply,
                        std::string* error) {
  for (const std::string* arg : {&arg0, &arg1, &arg2}) {
    if (arg->size() > kMaxArgument) {
      *error = "an attach argument is " + std::to_string(arg->size()) +
               " bytes; the JVM takes at most " + std::to_string(kMaxArgument) + ": \"" +
               arg->substr(0, 60) + "...\"";
      return false;
    }
  }
  const std::string path = SocketPath(target);
  if (!IsSocket(path) && !StartListener(target, listener_timeout, error)) return false;
  int fd = Connect(path, error);
  if (fd < 0 && (errno == ECONNREFUSED || errno == ENOENT)) {
    // A socket file left by a JVM that had the same pid: the trigger makes the JVM replace it.
    if (!StartListener(target, listener_timeout, error)) return false;
    fd = Connect(path, error);
  }
  if (fd < 0) return false;
  std::string request = "1";
  for (const std::string* part : {&operation, &arg0, &arg1, &arg2}) {
    request.push_back('\0');
    request += *part;
  }
  request.push_back('\0');
  std::string bytes;
  const bool answered = SendAll(fd, request, error) && ReceiveAll(fd, &bytes, error);
  close(fd);
  if (!answered) return false;
  if (bytes.empty()) {
    *error = "process " + Pid(target.pid) +
             " closed the attach connection without a reply (a JVM accepts only its own "
             "uid and gid, or root)";
    return false;
  }
  const size_t newline = bytes.find('\n');
  const std::string first = bytes.substr(0, newline);
  char* end = nullptr;
  const long status = strtol(first.c_str(), &end, 10);
  if (first.empty() || *end != '\0') {
    *error = "the JVM's reply does not start with a status line: \"" + bytes.substr(0, 200) + "\"";
    return false;
  }
  reply->status = static_cast<int>(status);
  reply->output = newline == std::string::npos ? "" : bytes.substr(newline + 1);
  return true;
}

bool LoadAgent(const AttachTarget& target, const std::string& library, const std::string& options,
               std::chrono::milliseconds listener_timeout, int* agent_code, std::string* error) {
  struct stat info;
  if (!target.root.empty() && stat((target.root + library).c_str(), &info) != 0) {
    *error = "process " + Pid(target.pid) + " runs in another mount namespace (a container) " +
             "where " + library + " does not exist (" + Errno() +
             "); put libctxprof.so at the same path inside it";
    return false;
  }
  AttachReply reply;
  if (!RunAttachOperation(target, "load", library, "true", options, listener_timeout, &reply,
                          error)) {
    return false;
  }
  constexpr char kReturnCode[] = "return code: ";
  std::string output = reply.output;
  while (!output.empty() && output.back() == '\n') output.pop_back();
  if (reply.status == 0 && output.rfind(kReturnCode, 0) == 0) {
    *agent_code = atoi(output.c_str() + strlen(kReturnCode));
    return true;
  }
  *error = "the JVM did not run the agent (status " + std::to_string(reply.status) +
           "): " + (output.empty() ? "no message" : output);
  return false;
}

}  // namespace ctxprof::tools
