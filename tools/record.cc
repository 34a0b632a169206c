#include "tools/record.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "profiler/options.h"

namespace ctxprof::tools {

namespace {

// Flags that map one-to-one to an agent key.
struct FlagKey {
  const char* flag;
  const char* key;
};
constexpr FlagKey kFlagKeys[] = {
    {"--event", "event"},   {"--interval", "interval"},     {"--wall", "wall"},
    {"--depth", "depth"},   {"--attributes", "attributes"}, {"--filter", "filter"},
    {"--clock", "clock"},   {"--chunksize", "chunksize"},   {"--chunktime", "chunktime"},
    {"--unwind", "unwind"}, {"--alloc", "alloc"},           {"--lock", "lock"},
    {"--select", "select"}, {"--jfrsync", "jfrsync"},       {"--otelcontext", "otelcontext"},
};

bool IsFile(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

std::string FolderOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// The folder of the running binary with every symbolic link resolved (the kernel's
// /proc/self/exe): found even when the binary was run through PATH or a link. "" when the link
// cannot be read (no /proc); the caller still has argv[0]'s folder.
std::string SelfFolder() {
  char path[PATH_MAX];
  const ssize_t length = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (length <= 0) return "";
  return FolderOf(std::string(path, static_cast<size_t>(length)));
}

}  // namespace

FlagParse ParseAgentFlag(const std::string& command, const std::vector<std::string>& args,
                         size_t* i, RecordOptions* out, std::string* error) {
  const std::string& flag = args[*i];
  if (flag == "--live") {  // the agent's one option without a value
    out->agent_options.emplace_back("live", "");
    return FlagParse::kParsed;
  }
  const FlagKey* mapped = nullptr;
  for (const FlagKey& candidate : kFlagKeys) {
    if (flag == candidate.flag) mapped = &candidate;
  }
  const bool known = mapped != nullptr || flag == "--lib" || flag == "-o" || flag == "--output" ||
                     flag == "--option";
  if (!known) return FlagParse::kNotAgentFlag;
  if (*i + 1 >= args.size() || args[*i + 1] == "--") {
    *error = command + ": " + flag + " needs a value";
    return FlagParse::kError;
  }
  const std::string& value = args[++*i];
  if (mapped != nullptr) {
    out->agent_options.emplace_back(mapped->key, value);
  } else if (flag == "--lib") {
    out->library = value;
  } else if (flag == "--option") {
    const size_t eq = value.find('=');
    if (eq == std::string::npos || eq == 0) {
      *error = command + ": --option wants key=value, got \"" + value + "\"";
      return FlagParse::kError;
    }
    out->agent_options.emplace_back(value.substr(0, eq), value.substr(eq + 1));
  } else {
    out->output = value;
  }
  return FlagParse::kParsed;
}

bool ParseRecordArguments(const std::vector<std::string>& args, RecordOptions* out,
                          std::string* error) {
  size_t i = 0;
  for (; i < args.size() && args[i] != "--"; i++) {
    const std::string& flag = args[i];
    if (flag.empty() || flag[0] != '-') {
      *error = "record: unexpected \"" + flag + "\"; the java command goes after \"--\"";
      return false;
    }
    const FlagParse parsed = ParseAgentFlag("record", args, &i, out, error);
    if (parsed == FlagParse::kError) return false;
    if (parsed == FlagParse::kNotAgentFlag) {
      *error = "record: unknown option \"" + flag + "\" (see ctxprof record --help)";
      return false;
    }
  }
  if (i + 1 >= args.size()) {
    *error =
        "record: no command; write it after \"--\", e.g. ctxprof record -o out.jfr -- java "
        "-jar app.jar";
    return false;
  }
  out->command.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
  return true;
}

std::string RepositoryOf(const RecordOptions& options) {
  std::string folder;
  for (const auto& [key, value] : options.agent_options) {
    if (key == "repository") folder = value;
  }
  return folder;
}

bool AgentOptionString(const std::string& command, const RecordOptions& options, std::string* out,
                       std::string* error) {
  std::string text = "start";
  auto append = [&](const std::string& key, const std::string& value) {
    if (value.empty() || value.find(',') != std::string::npos) {
      *error = command + ": " + key + "=\"" + value + "\": " +
               (value.empty() ? "empty value" : "the agent splits its options at ','; use ';'") +
               " (docs/SAMPLER.md)";
      return false;
    }
    text += "," + key + "=" + value;
    return true;
  };
  for (const auto& [key, value] : options.agent_options) {
    if (key == "live" && value.empty()) {
      text += ",live";
    } else if (!append(key, value)) {
      return false;
    }
  }
  if (RepositoryOf(options).empty() && !append("file", options.output)) return false;
  *out = text;
  return true;
}

bool CheckAgentOptions(const std::string& command, const std::string& agent_options,
                       std::string* error) {
  const std::string prefix = "start,";
  const std::string options =
      agent_options.rfind(prefix, 0) == 0 ? agent_options.substr(prefix.size()) : "";
  const StatusOr<Options> parsed = ParseOptions(options);
  if (parsed.ok()) return true;
  *error = command + ": " + parsed.status().message();
  return false;
}

FileState StateOf(const std::string& path) {
  struct stat info;
  FileState state;
  if (stat(path.c_str(), &info) != 0) return state;
  state.exists = true;
  state.device = info.st_dev;
  state.inode = info.st_ino;
  state.size = static_cast<uint64_t>(info.st_size);
  state.modified_nanos =
      static_cast<int64_t>(info.st_mtim.tv_sec) * 1000000000 + info.st_mtim.tv_nsec;
  return state;
}

bool RecordingWritten(const FileState& before, const FileState& after) {
  if (!after.exists) return false;
  return !before.exists || before.device != after.device || before.inode != after.inode ||
         before.size != after.size || before.modified_nanos != after.modified_nanos;
}

bool JvmCommand(const RecordOptions& options, const std::string& library,
                const std::string& agent_options, std::vector<std::string>* out,
                std::string* error) {
  if (library.find('=') != std::string::npos) {
    *error = "record: the agent path \"" + library +
             "\" holds '=', which -agentpath cannot take; copy the library elsewhere";
    return false;
  }
  out->clear();
  out->push_back(options.command[0]);
  out->push_back("-agentpath:" + library + "=" + agent_options);
  out->insert(out->end(), options.command.begin() + 1, options.command.end());
  return true;
}

bool FindAgentLibrary(const std::string& command, const std::string& explicit_path,
                      const std::string& executable, std::string* out, std::string* error) {
  if (!explicit_path.empty()) {
    if (!IsFile(explicit_path)) {
      *error = command + ": --lib " + explicit_path + ": no such file";
      return false;
    }
    *out = explicit_path;
    return true;
  }
  // The release layouts first (bin/ctxprof with lib/libctxprof.so; the Debian package's
  // /usr/bin/ctxprof with /usr/lib/ctxprof/), then the build tree's.
  const std::string self = SelfFolder();
  const std::string named = FolderOf(executable);
  char resolved[PATH_MAX];
  const bool same = realpath(named.c_str(), resolved) != nullptr && self == resolved;
  std::vector<std::string> tried;
  for (const std::string& folder : {self, same ? std::string() : named}) {
    if (folder.empty()) continue;
    for (const char* relative : {"/../lib/libctxprof.so", "/../lib/ctxprof/libctxprof.so",
                                 "/libctxprof.so", "/../jni/libctxprof.so"}) {
      const std::string candidate = folder + relative;
      if (IsFile(candidate)) {
        *out = candidate;
        return true;
      }
      tried.push_back(candidate);
    }
  }
  std::string list;
  for (const std::string& candidate : tried) list += (list.empty() ? "" : ", ") + candidate;
  *error = command + ": found no libctxprof.so near the ctxprof binary (from /proc/self/exe" +
           (same ? "" : ", then from " + executable) + "); tried " + list +
           "; pass --lib PATH (bazel build -c opt //jni:libctxprof.so)";
  return false;
}

int RunCommand(const std::vector<std::string>& command, std::string* error) {
  // The child reports a failed exec through a close-on-exec pipe: EOF means exec succeeded.
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) {
    *error = std::string("record: pipe: ") + strerror(errno);
    return 127;
  }
  struct sigaction ignore {
  }, old_int{}, old_quit{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGINT, &ignore, &old_int);
  sigaction(SIGQUIT, &ignore, &old_quit);
  std::vector<char*> argv;
  for (const std::string& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  const pid_t child = fork();
  if (child == 0) {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGQUIT, &old_quit, nullptr);
    execvp(argv[0], argv.data());
    const int failure = errno;
    (void)!write(report[1], &failure, sizeof(failure));
    _exit(127);
  }
  close(report[1]);
  int status = 0;
  int exec_errno = 0;
  if (child < 0) {
    exec_errno = errno;
  } else {
    while (read(report[0], &exec_errno, sizeof(exec_errno)) < 0 && errno == EINTR) {
    }
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
  }
  close(report[0]);
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGQUIT, &old_quit, nullptr);
  if (exec_errno != 0) {
    *error = "record: cannot run " + command[0] + ": " + strerror(exec_errno);
    return 127;
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

}  // namespace ctxprof::tools
