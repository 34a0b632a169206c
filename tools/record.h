// `ctxprof record [options] -- java ARGS...`: runs the JVM with the ctxprof agent,
//
//   java -agentpath:<libctxprof.so>=start,<key=value,...>,file=<out> ARGS...
//
// The agent option string is the one ParseOptions reads (docs/SAMPLER.md): the tool maps its
// flags to keys and checks the string with that same parser before it starts the JVM
// (CheckAgentOptions), so a bad key or value is refused at once, by the message the agent would
// print. What only the running agent can find (a file that cannot be created, a refused
// engine) makes it start no session: then no recording is written, and `record` says so and
// exits 1 even when the JVM exits 0 (RecordingWritten). The agent argument goes right after the
// java executable because the JVM only takes options before the main class.
#ifndef CTXPROF_TOOLS_RECORD_H_
#define CTXPROF_TOOLS_RECORD_H_

#include <string>
#include <utility>
#include <vector>

namespace ctxprof::tools {

// The flags of `record` (and of `attach PID start`, which takes the same agent flags).
struct RecordOptions {
  std::string library;                 // --lib; "" = look near the ctxprof binary
  std::string output = "ctxprof.jfr";  // -o
  // Agent keys in the order given (--event -> event, --option key=value -> key, ...).
  std::vector<std::pair<std::string, std::string>> agent_options;
  std::vector<std::string> command;  // after "--": the java executable and its arguments
};

// The agent flags, shared by `record` and `attach PID start`: --event, --interval, --wall,
// --depth, --attributes, --filter, --clock, --chunksize, --chunktime, --unwind, --alloc,
// --lock, --select, --live (the one without a value) and --option KEY=VALUE become agent keys;
// -o/--output and --lib set their fields. Parses args[*i] and its value, leaving *i on the
// value. kNotAgentFlag (nothing consumed) when
// args[*i] is none of them; kError + *error ("<command>: ...") when the value is missing or
// --option is not key=value.
enum class FlagParse { kParsed, kNotAgentFlag, kError };
FlagParse ParseAgentFlag(const std::string& command, const std::vector<std::string>& args,
                         size_t* i, RecordOptions* out, std::string* error);

// Parses the arguments after "record". False + *error (a usage error) for an unknown flag, a
// flag without value (every flag but --live takes one), or no command after "--".
bool ParseRecordArguments(const std::vector<std::string>& args, RecordOptions* out,
                          std::string* error);

// The folder of `--option repository=DIR`, or "" when none: the recording then goes there, one
// file per chunk (what otlp= and upload= need), and -o is not used (the agent's file= and
// repository= are exclusive).
std::string RepositoryOf(const RecordOptions& options);

// "start,key=value,...,file=<output>" (live alone, without a value; no file= with a repository).
// False + *error
// ("<command>: ...") if a value holds a ',' (the agent splits options at commas) or is empty.
bool AgentOptionString(const std::string& command, const RecordOptions& options, std::string* out,
                       std::string* error);

// Checks `agent_options` ("start,<options>") with the agent's parser (profiler/options.h).
// False + *error ("<command>: option '...': ...") when the agent would refuse them.
bool CheckAgentOptions(const std::string& command, const std::string& agent_options,
                       std::string* error);

// What a recording file looked like, to tell whether the JVM's agent wrote it.
struct FileState {
  bool exists = false;
  uint64_t device = 0, inode = 0, size = 0;
  int64_t modified_nanos = 0;
};
FileState StateOf(const std::string& path);
// True when `after` is a file written since `before` (created, replaced, grown or modified).
bool RecordingWritten(const FileState& before, const FileState& after);

// The command to exec: command[0], "-agentpath:<library>=<agent_options>", command[1..].
// False + *error if the library path holds '=' (the JVM splits -agentpath at the first '=').
bool JvmCommand(const RecordOptions& options, const std::string& library,
                const std::string& agent_options, std::vector<std::string>* out,
                std::string* error);

// The agent library: `explicit_path` if given (it must exist), else the first libctxprof.so in
// ../lib/ (the release archive), ../lib/ctxprof/ (the Debian package), the same folder, or
// ../jni/ (Bazel's output tree), each from the folder of the running binary (/proc/self/exe,
// links resolved) and then from the folder of `executable` (argv[0]). False + *error
// ("<command>: ...") naming every place searched and the --lib fix.
bool FindAgentLibrary(const std::string& command, const std::string& explicit_path,
                      const std::string& executable, std::string* out, std::string* error);

// Runs `command` (PATH lookup) and waits for it; SIGINT/SIGQUIT are ignored meanwhile so ^C
// reaches the JVM, which stops the recording itself. Returns the child's exit status, 128 +
// signal if it was killed, or 127 + *error if it could not be started.
int RunCommand(const std::vector<std::string>& command, std::string* error);

}  // namespace ctxprof::tools

#endif  // CTXPROF_TOOLS_RECORD_H_
