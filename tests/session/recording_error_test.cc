// A session whose file= recording hits a real full filesystem (ENOSPC) through the C API: the
// error is printed once on stderr by the background thread while the session runs, Stats()
// shows it meanwhile, and ctxprof_stop() returns CTXPROF_EIO without printing it again.
//
// The filesystem is a 64 KiB tmpfs mounted in a private mount namespace of a forked child (as
// root, else in a new user namespace); the test is skipped when neither is permitted. After the
// session started, the child fills the tmpfs with another file, so the writer's next flush (1 s)
// fails. /dev/full is not used: opening a recording fchmods the file.
#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "profiler/ctxprof.h"
#include "profiler/profiler.h"

namespace {

constexpr int kSkip = 77;
constexpr int kFilesystemBytes = 64 * 1024;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool WriteString(const char* path, const std::string& text) {
  const int fd = open(path, O_WRONLY);
  if (fd < 0) return false;
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

// A private mount namespace in which `dir` is a tmpfs of kFilesystemBytes; "" or why not.
std::string MountSmallTmpfs(const std::string& dir) {
  std::string why;
  if (unshare(CLONE_NEWNS) != 0) {
    why = std::string("unshare(CLONE_NEWNS): ") + strerror(errno);
    const uid_t uid = getuid();
    const gid_t gid = getgid();
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
      return why + "; unshare(CLONE_NEWUSER | CLONE_NEWNS): " + strerror(errno);
    }
    if (!WriteString("/proc/self/setgroups", "deny") ||
        !WriteString("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1") ||
        !WriteString("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1")) {
      return why + "; cannot map the user namespace's ids: " + strerror(errno);
    }
  }
  // Without this, a shared root would propagate the tmpfs to the test's own namespace.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return std::string("making / private: ") + strerror(errno);
  }
  const std::string size = "size=" + std::to_string(kFilesystemBytes);
  if (mount("none", dir.c_str(), "tmpfs", 0, size.c_str()) != 0) {
    return "mount -t tmpfs " + dir + ": " + strerror(errno);
  }
  return "";
}

// Writes to `path` until the filesystem is full.
void FillFilesystem(const std::string& path) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return;
  char block[4096];
  memset(block, 'x', sizeof(block));
  while (write(fd, block, sizeof(block)) > 0) {
  }
  close(fd);
}

void BurnCpu(std::chrono::milliseconds duration) {
  const auto end = std::chrono::steady_clock::now() + duration;
  volatile uint64_t x = 1;
  while (std::chrono::steady_clock::now() < end) {
    for (int i = 0; i < 10000; i++) x = x * 6364136223846793005ull + 1;
  }
}

// The forked child: runs the session and writes what it saw, "key=value" per line, to `report`.
[[noreturn]] void RunChild(const std::string& dir, const std::string& stderr_path,
                           const std::string& report_path) {
  const int err = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (err >= 0) dup2(err, STDERR_FILENO);
  std::ofstream report(report_path);
  const std::string why = MountSmallTmpfs(dir);
  if (!why.empty()) {
    report << "skip=" << why << "\n";
    report.close();
    _exit(kSkip);
  }
  const std::string file = dir + "/recording.jfr";
  char error[512];
  if (ctxprof_start(("event=cpu,interval=1ms,file=" + file).c_str(), error, sizeof(error)) != 0) {
    report << "start_error=" << error << "\n";
    report.close();
    _exit(3);
  }
  FillFilesystem(dir + "/filler");
  bool stats_error_while_running = false;
  bool line_while_running = false;
  for (int i = 0; i < 100 && !(stats_error_while_running && line_while_running); i++) {
    BurnCpu(std::chrono::milliseconds(100));
    const ctxprof::SessionStats stats = ctxprof::Profiler::Global()->Stats();
    if (stats.running &&
        stats.recording_error.find("No space left on device") != std::string::npos) {
      stats_error_while_running = true;
    }
    fflush(stderr);
    if (ReadFile(stderr_path).find("No space left on device") != std::string::npos) {
      line_while_running = true;
    }
  }
  report << "stats_error_while_running=" << stats_error_while_running << "\n";
  report << "line_while_running=" << line_while_running << "\n";
  report << "stop=" << ctxprof_stop() << "\n";
  const ctxprof::SessionStats stats = ctxprof::Profiler::Global()->Stats();
  report << "reported=" << stats.recording_error_reported << "\n";
  // The aggregator (dump) gets its samples through the recording: a failed one still hands on
  // every record it had and every later one.
  uint64_t aggregated = 0;
  for (const ctxprof::AggregatedStack& stack : ctxprof::Profiler::Global()->Stacks()) {
    aggregated += stack.samples;
  }
  report << "consumed=" << stats.consumed << "\n";
  report << "aggregated=" << aggregated << "\n";
  report << "recording_error=" << stats.recording_error << "\n";
  struct stat info;
  report << "size=" << (stat(file.c_str(), &info) == 0 ? info.st_size : -1) << "\n";
  report << "file=" << file << "\n";
  report.close();
  _exit(0);
}

std::map<std::string, std::string> ParseReport(const std::string& text) {
  std::map<std::string, std::string> values;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t equals = line.find('=');
    if (equals != std::string::npos) values[line.substr(0, equals)] = line.substr(equals + 1);
  }
  return values;
}

TEST(RecordingErrorTest, FullFilesystemIsReportedOnceWhileTheSessionRuns) {
  const std::string tmp = getenv("TEST_TMPDIR") != nullptr ? getenv("TEST_TMPDIR") : "/tmp";
  const std::string dir = tmp + "/small-fs";
  const std::string stderr_path = tmp + "/child.stderr";
  const std::string report_path = tmp + "/child.report";
  ASSERT_EQ(mkdir(dir.c_str(), 0700), 0) << dir << ": " << strerror(errno);
  const pid_t child = fork();
  ASSERT_GE(child, 0) << strerror(errno);
  if (child == 0) RunChild(dir, stderr_path, report_path);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  const std::string report_text = ReadFile(report_path);
  const std::string child_stderr = ReadFile(stderr_path);
  std::map<std::string, std::string> report = ParseReport(report_text);
  if (WIFEXITED(status) && WEXITSTATUS(status) == kSkip) {
    GTEST_SKIP() << "cannot mount a tmpfs in a private mount namespace: " << report["skip"];
  }
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "child status " << status << "\nreport:\n"
      << report_text << "stderr:\n"
      << child_stderr;
  printf("child's stderr:\n%s", child_stderr.c_str());

  EXPECT_EQ(report["stats_error_while_running"], "1") << report_text;
  EXPECT_EQ(report["line_while_running"], "1") << child_stderr;
  EXPECT_EQ(report["stop"], std::to_string(CTXPROF_EIO));
  EXPECT_EQ(report["reported"], "1");
  EXPECT_NE(report["consumed"], "0") << report_text;
  EXPECT_EQ(report["aggregated"], report["consumed"]) << report_text;
  const std::string file = report["file"];
  EXPECT_NE(report["recording_error"].find("cannot write recording file " + file),
            std::string::npos)
      << report["recording_error"];
  EXPECT_LE(std::stoll(report["size"]), kFilesystemBytes);

  // Exactly one line, printed once (ctxprof_stop prints nothing; it returns CTXPROF_EIO).
  std::vector<std::string> lines;
  std::istringstream stream(child_stderr);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 1u) << child_stderr;
  const std::string& line = lines[0];
  EXPECT_EQ(line.rfind("ctxprof: the recording " + file + " failed: cannot write recording file " +
                           file + " at offset ",
                       0),
            0u)
      << line;
  EXPECT_NE(line.find(": No space left on device (free disk space"), std::string::npos) << line;
  EXPECT_NE(line.find("; sampling goes on, but nothing more is written to this recording"),
            std::string::npos)
      << line;
}

}  // namespace
