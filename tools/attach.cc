#include "tools/attach.h"

#include <limits.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "tools/hotspot_attach.h"

namespace ctxprof::tools {
namespace {

constexpr const char* kActions[] = {"start", "stop", "dump", "status"};

// Agent_OnAttach's return codes (jni/attach_command.h), for a reply that never arrived.
const char* MeaningOf(int code) {
  switch (code) {
    case 1:
      return "malformed command or option";
    case 2:
      return "the command does not fit the profiler's state";
    case 3:
      return "I/O error";
    case 4:
      return "the agent could not set up JVMTI";
    case 5:
      return "the system refused a resource the options ask for";
    default:
      return "unknown code";
  }
}

std::string Absolute(const std::string& path, const std::string& cwd) {
  return path.empty() || path[0] == '/' ? path : cwd + "/" + path;
}

// A name no other client uses: our pid and 64 random bits.
std::string ReplyName() {
  uint64_t nonce = 0;
  if (getrandom(&nonce, sizeof(nonce), 0) != sizeof(nonce)) {
    nonce = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  }
  char name[64];
  snprintf(name, sizeof(name), "/tmp/.ctxprof-reply.%d.%016llx", static_cast<int>(getpid()),
           static_cast<unsigned long long>(nonce));
  return name;
}

// Reads and deletes the agent's reply file; false when there is none.
bool TakeReply(const std::string& path, std::string* text) {
  std::ifstream file(path);
  if (!file) return false;
  std::stringstream content;
  content << file.rdbuf();
  *text = content.str();
  while (!text->empty() && text->back() == '\n') text->pop_back();
  unlink(path.c_str());
  return true;
}

// The libctxprof.so process `pid` has mapped (loaded as an agent, by System.load or by an
// earlier attach), as a path in its own file system; "" when none. A file replaced since it was
// loaded (" (deleted)") still names it: the JVM's dlopen finds a loaded library by its path.
std::string LoadedLibrary(pid_t pid) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  const std::string name = "/libctxprof.so";
  const std::string deleted = " (deleted)";
  std::string line;
  while (std::getline(maps, line)) {
    const size_t path = line.find('/');
    if (path == std::string::npos) continue;
    std::string file = line.substr(path);
    if (file.size() > deleted.size() &&
        file.compare(file.size() - deleted.size(), deleted.size(), deleted) == 0) {
      file.resize(file.size() - deleted.size());
    }
    if (file.size() > name.size() &&
        file.compare(file.size() - name.size(), name.size(), name) == 0) {
      return file;
    }
  }
  return "";
}

// The library to load: with --lib (`explicit_lib`), ours, unless the JVM already has another
// one (a second copy would be a second profiler that cannot see the first one's session);
// without, the JVM's own if it has one, else ours. `ours` is "" when it was not found
// (`ours_error` says why).
bool ChooseLibrary(pid_t pid, const std::string& ours, const std::string& ours_error,
                   bool explicit_lib, std::string* library, std::string* error) {
  const std::string loaded = LoadedLibrary(pid);
  if (explicit_lib && !ours.empty() && !loaded.empty() && loaded != ours) {
    *error = "attach: process " + std::to_string(pid) + " already has libctxprof from " + loaded +
             "; a second copy from " + ours + " would not see its session: pass --lib " + loaded +
             " or leave --lib out";
    return false;
  }
  *library = explicit_lib || loaded.empty() ? ours : loaded;
  if (library->empty()) *error = ours_error;
  return !library->empty();
}

// Runs `command` in the JVM's agent, prints the answer; the exit status.
int Ask(const AttachTarget& target, const std::string& library, const std::string& command,
        std::chrono::milliseconds timeout) {
  const std::string reply = ReplyName();
  int code = 0;
  std::string error;
  const bool ran = LoadAgent(target, library, command + ",reply=" + reply, timeout, &code, &error);
  std::string text;
  const bool answered = TakeReply(target.root + reply, &text);
  if (ran && code == 0) {
    printf("%s\n", answered ? text.c_str() : "ok");
    return 0;
  }
  if (ran) {
    error = answered ? text
                     : "the agent in process " + std::to_string(target.pid) + " failed with code " +
                           std::to_string(code) + " (" + MeaningOf(code) +
                           "); its message is on the JVM's stderr";
  }
  fprintf(stderr, "ctxprof: %s\n", error.c_str());
  return 1;
}

}  // namespace

bool ParseAttachArguments(const std::vector<std::string>& args, AttachArguments* out,
                          std::string* error) {
  if (args.size() < 2) {
    *error = "attach: want PID and an action: ctxprof attach PID start|stop|dump|status";
    return false;
  }
  char* end = nullptr;
  const long pid = strtol(args[0].c_str(), &end, 10);
  if (args[0].empty() || *end != '\0' || pid <= 0 || pid > INT_MAX) {
    *error = "attach: \"" + args[0] + "\" is not a process id";
    return false;
  }
  out->pid = static_cast<pid_t>(pid);
  out->action = args[1];
  bool known = false;
  for (const char* action : kActions) known = known || out->action == action;
  if (!known) {
    *error = "attach: unknown action \"" + out->action + "\" (start, stop, dump or status)";
    return false;
  }
  const bool dump = out->action == "dump";
  if (dump) out->agent.output.clear();  // no default: dump names its file
  for (size_t i = 2; i < args.size(); i++) {
    const std::string flag = args[i];
    if (flag == "--timeout") {
      const double seconds = i + 1 < args.size() ? strtod(args[i + 1].c_str(), &end) : 0;
      if (i + 1 >= args.size() || args[i + 1].empty() || *end != '\0' || !(seconds > 0) ||
          seconds > 3600) {
        *error = "attach: --timeout wants seconds from 0 to 3600, e.g. --timeout 30";
        return false;
      }
      out->timeout = std::chrono::milliseconds(std::lround(seconds * 1000));
      i++;
      continue;
    }
    const FlagParse parsed = ParseAgentFlag("attach " + out->action, args, &i, &out->agent, error);
    if (parsed == FlagParse::kError) return false;
    const bool output = flag == "-o" || flag == "--output";
    if (parsed == FlagParse::kNotAgentFlag ||
        (out->action != "start" && flag != "--lib" && !(dump && output))) {
      *error = "attach " + out->action + ": " +
               (parsed == FlagParse::kNotAgentFlag ? "unknown option \"" + flag + "\""
                                                   : flag + " is an option of start") +
               " (see ctxprof attach --help)";
      return false;
    }
  }
  if (dump && out->agent.output.empty()) {
    *error = "attach dump: -o FILE is required";
    return false;
  }
  return true;
}

bool AttachCommandString(const AttachArguments& arguments, const std::string& cwd, std::string* out,
                         std::string* error) {
  RecordOptions agent = arguments.agent;
  agent.output = Absolute(agent.output, cwd);
  if (arguments.action == "start") {
    return AgentOptionString("attach start", agent, out, error);
  }
  if (arguments.action == "dump") {
    if (agent.output.find(',') != std::string::npos) {
      *error = "attach dump: -o \"" + agent.output +
               "\": the agent splits its options at ','; choose a path without one";
      return false;
    }
    *out = "dump,file=" + agent.output;
    return true;
  }
  *out = arguments.action;
  return true;
}

int RunAttach(const AttachArguments& arguments, const std::string& executable) {
  std::string error, command;
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof(cwd)) == nullptr) {
    fprintf(stderr, "ctxprof: attach: cannot read the working directory: %s\n", strerror(errno));
    return 1;
  }
  if (!AttachCommandString(arguments, cwd, &command, &error)) {
    fprintf(stderr, "ctxprof: %s\n", error.c_str());
    return 2;
  }
  // Our library is located with our own permissions, before we take the JVM's uid.
  std::string found, ours, ours_error;
  char resolved[PATH_MAX];
  if (FindAgentLibrary("attach", arguments.agent.library, executable, &found, &ours_error)) {
    if (realpath(found.c_str(), resolved) != nullptr) {
      ours = resolved;
    } else {
      ours_error = "attach: " + found + ": " + strerror(errno);
    }
  }
  AttachTarget target;
  std::string library;
  if (FindAttachTarget(arguments.pid, &target, &error) && ActAsTargetUser(target, &error) &&
      ChooseLibrary(target.pid, ours, ours_error, !arguments.agent.library.empty(), &library,
                    &error)) {
    return Ask(target, library, command, arguments.timeout);
  }
  fprintf(stderr, "ctxprof: %s\n", error.c_str());
  return 1;
}

}  // namespace ctxprof::tools
