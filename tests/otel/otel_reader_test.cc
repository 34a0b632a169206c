// The OpenTelemetry context reader of tools/otel_reader.h (written from OTEP 4947 and OTEP 4719
// alone; also behind `ctxprof otel`) reading ANOTHER process while it runs: the workloads
// (otel_c_workload through the C API; OtelWorkload through the Java API's fast path,
// ContextSetter and a virtual thread, on each installed JDK) print the contexts their threads
// set, and this test finds them in the workload's memory the way an external profiler does
// (the process context in the OTEL_CTX mapping; each thread's record behind
// otel_thread_ctx_v1's TLSDESC slot, read while the thread is ptrace-stopped).
#include "tools/otel_reader.h"

#include <gtest/gtest.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

namespace {

using ctxprof::tools::FindThreadContextSlot;
using ctxprof::tools::ProcessContextView;
using ctxprof::tools::ReadProcessContext;
using ctxprof::tools::ReadThreadContext;
using ctxprof::tools::ThreadView;
using ctxprof::tools::TlsSlot;

// ---- The workload -----------------------------------------------------------------------------

struct Workload {
  pid_t pid = -1;
  FILE* out = nullptr;  // its stdout
  int in = -1;          // its stdin
};

Workload Spawn(const std::vector<std::string>& command, const std::string& preload) {
  int to_child[2], from_child[2];
  if (pipe(to_child) != 0 || pipe(from_child) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(to_child[0], 0);
    dup2(from_child[1], 1);
    close(to_child[1]);
    close(from_child[0]);
    setenv("OTEL_SERVICE_NAME", "otel-reader-test", 1);
    if (!preload.empty()) setenv("LD_PRELOAD", preload.c_str(), 1);
    std::vector<char*> argv;
    for (const std::string& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(to_child[0]);
  close(from_child[1]);
  return Workload{pid, fdopen(from_child[0], "r"), to_child[1]};
}

// Reads one round: the "ctx" lines up to "ready" (and the "foreign" ones into *foreign). False
// on EOF.
bool ReadRound(FILE* out, std::vector<std::string>* lines, std::vector<std::string>* foreign) {
  char buffer[4096];
  while (fgets(buffer, sizeof(buffer), out) != nullptr) {
    std::string line(buffer);
    if (!line.empty() && line.back() == '\n') line.pop_back();
    if (line == "ready") return true;
    if (line.rfind("ctx ", 0) == 0) lines->push_back(line);
    if (line.rfind("foreign ", 0) == 0) foreign->push_back(line);
  }
  return false;
}

std::string TestFile(const char* path) {
  return std::string(getenv("TEST_SRCDIR")) + "/ctxprof/" + path;
}

// Checks every thread the workload reported, over two rounds; `threads` = lines per round.
// Runs `command` and waits for it; its exit status.
int Run(const std::vector<std::string>& command) {
  const pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> argv;
    for (const std::string& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// `preload`: a library for LD_PRELOAD that exports its own otel_thread_ctx_v1; then each thread
// also reports that variable, which must stay null (our writes are ours). `attach`: the workload
// starts no session; after round 0 (then nothing may be published) `ctxprof attach` starts one
// with otelcontext=true, and round 1 is checked.
void CheckWorkload(const std::vector<std::string>& command, size_t threads,
                   const std::string& preload = "", bool attach = false) {
  Workload workload = Spawn(command, preload);
  ASSERT_GT(workload.pid, 0);
  for (int round = 0; round < 2; round++) {
    std::vector<std::string> lines, foreign;
    ASSERT_TRUE(ReadRound(workload.out, &lines, &foreign))
        << "the workload ended before round " << round;
    ASSERT_EQ(lines.size(), threads);
    ASSERT_EQ(foreign.size(), preload.empty() ? 0 : threads);
    for (const std::string& line : foreign) {
      EXPECT_EQ(line.substr(line.rfind(' ') + 1), "0") << line << ": our write went elsewhere";
    }

    if (attach && round == 0) {
      EXPECT_FALSE(ReadProcessContext(workload.pid).ok()) << "published before attach";
      const std::string recording = std::string(getenv("TEST_TMPDIR")) + "/attach.jfr";
      ASSERT_EQ(Run({TestFile("tools/ctxprof"), "attach", std::to_string(workload.pid), "start",
                     "--lib", TestFile("jni/libctxprof.so"), "--event", "ctimer", "--interval",
                     "100ms", "--otelcontext", "true", "-o", recording}),
                0);
      ASSERT_EQ(write(workload.in, "next\n", 5), 5);
      continue;
    }
    const ctxprof::StatusOr<ProcessContextView> read = ReadProcessContext(workload.pid);
    ASSERT_TRUE(read.ok()) << read.status().message();
    ProcessContextView process = read.value();
    EXPECT_EQ(process.resource["service.name"], "otel-reader-test");
    EXPECT_EQ(process.resource["process.pid"], std::to_string(workload.pid));
    ASSERT_EQ(process.attributes["threadlocal.schema_version"],
              std::vector<std::string>{"tlsdesc_v1_dev"});
    const std::vector<std::string> key_map = process.attributes["threadlocal.attribute_key_map"];
    ASSERT_EQ(key_map, (std::vector<std::string>{"http.route", "tenant"}));

    const ctxprof::StatusOr<TlsSlot> slot = FindThreadContextSlot(workload.pid);
    ASSERT_TRUE(slot.ok()) << slot.status().message();

    for (const std::string& line : lines) {
      std::istringstream fields(line);
      std::string word, trace, span, attributes;
      pid_t tid = 0;
      fields >> word >> tid >> trace >> span >> attributes;
      const ctxprof::StatusOr<ThreadView> thread =
          ReadThreadContext(workload.pid, tid, slot.value());
      ASSERT_TRUE(thread.ok()) << line << ": " << thread.status().message();
      const ThreadView& view = thread.value();
      // libctxprof.so also has initial-exec TLS (its tid and log caches), so glibc always
      // gives its module static TLS, even with glibc.rtld.optional_static_tls=0: the TLSDESC
      // descriptor resolves to an offset from the thread pointer.
      EXPECT_FALSE(view.dynamic_tls) << line;
      if (trace == "none") {
        EXPECT_FALSE(view.present) << line << ": a record is published for an empty context";
        continue;
      }
      ASSERT_TRUE(view.present) << line << ": no valid record";
      EXPECT_EQ(view.trace, trace) << line;
      EXPECT_EQ(view.span, span) << line;
      std::string seen;
      for (const auto& [key, value] : view.attributes) {
        ASSERT_LT(static_cast<size_t>(key), key_map.size()) << line;
        seen += (seen.empty() ? "" : ";") + key_map[key] + "=" + value;
      }
      EXPECT_EQ(seen, attributes) << line;
    }
    const char* next = round == 0 ? "next\n" : "quit\n";
    ASSERT_EQ(write(workload.in, next, strlen(next)), static_cast<ssize_t>(strlen(next)));
  }
  close(workload.in);
  fclose(workload.out);
  int status = 0;
  ASSERT_EQ(waitpid(workload.pid, &status, 0), workload.pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

TEST(OtelReaderTest, CApiThreads) {
  CheckWorkload({TestFile("tests/otel/otel_c_workload"), TestFile("jni/libctxprof.so")}, 3);
}

// Another publisher first in the global scope: libctxprof.so (linked -Bsymbolic) still writes its
// own otel_thread_ctx_v1, and readers find our records through our relocation.
TEST(OtelReaderTest, CApiThreadsBesideAnotherPublisher) {
  CheckWorkload({TestFile("tests/otel/otel_c_workload"), TestFile("jni/libctxprof.so")}, 3,
                TestFile("tests/otel/libforeign_otel_publisher.so"));
}

// The Java workload on each JDK the suite tests (tests/jdks.sh): JDK 17, and 25 when installed.
TEST(OtelReaderTest, JavaThreads) {
  const std::string classpath =
      TestFile("java/ctxprof.jar") + ":" + TestFile("tests/java/ctxprof_tests.jar");
  int jdks = 0;
  for (const char* home :
       {"/usr/lib/jvm/java-17-openjdk-amd64", "/usr/lib/jvm/temurin-25-jdk-amd64"}) {
    const std::string java = std::string(home) + "/bin/java";
    if (access(java.c_str(), X_OK) != 0) continue;
    SCOPED_TRACE(java);
    jdks++;
    CheckWorkload(
        {java, "-Dctxprof.library=" + TestFile("jni/libctxprof.so"),
         "--enable-native-access=ALL-UNNAMED", "-cp", classpath, "io.ctxprof.OtelWorkload"},
        4);
  }
  EXPECT_GT(jdks, 0) << "no JDK 17 at /usr/lib/jvm/java-17-openjdk-amd64";
}

// Publishing started by `ctxprof attach` on a JVM whose threads write through the Java fast path:
// the library turns the Java writers on (JvmAgent::SyncJavaOtel). JDK 25 (virtual threads too)
// when installed, else JDK 17.
TEST(OtelReaderTest, JavaThreadsAfterAttach) {
  std::string java = "/usr/lib/jvm/temurin-25-jdk-amd64/bin/java";
  if (access(java.c_str(), X_OK) != 0) java = "/usr/lib/jvm/java-17-openjdk-amd64/bin/java";
  CheckWorkload({java, "-Dctxprof.library=" + TestFile("jni/libctxprof.so"),
                 "--enable-native-access=ALL-UNNAMED", "-cp",
                 TestFile("java/ctxprof.jar") + ":" + TestFile("tests/java/ctxprof_tests.jar"),
                 "io.ctxprof.OtelWorkload", "attach"},
                4, "", /*attach=*/true);
}

}  // namespace
