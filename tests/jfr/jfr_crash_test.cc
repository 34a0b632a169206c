// Crash safety and write errors: a writer killed with SIGKILL at several moments leaves every
// finished chunk readable and the chunk in progress readable up to its last flush, and never a
// file that makes `jfr` hang; a full disk (RLIMIT_FSIZE) or a bad path is an error naming the
// path, and what is left is a readable recording (file mode: the whole chunks written before).
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "profiler/jfr/jfr_reader.h"
#include "profiler/jfr_events/jfr_writer.h"
#include "tests/jfr/synthetic.h"
#include "tests/support/status_testing.h"

namespace ctxprof {
namespace {

std::vector<std::string> InstalledJfrTools() {
  std::vector<std::string> tools = {"/usr/lib/jvm/java-17-openjdk-amd64/bin/jfr"};
  const char* jdk25 = "/usr/lib/jvm/temurin-25-jdk-amd64/bin/jfr";
  if (access(jdk25, X_OK) == 0) {
    tools.push_back(jdk25);
  } else {
    printf("skipping JDK 25: not installed\n");
  }
  return tools;
}

// Runs `jfr <command> <file>` under a timeout; returns its exit status (124 = timed out).
int RunJfr(const std::string& tool, const std::string& command, const std::string& file) {
  const std::string line =
      "timeout 60 " + tool + " " + command + " '" + file + "' > /dev/null 2>&1";
  const int status = system(line.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The child: writes samples forever in repository mode, flushing after every batch. It reports
// the open and each flush with one byte on `report_fd`.
[[noreturn]] void WriteUntilKilled(const std::string& repository, int report_fd) {
  FakeClock clock;
  const uint64_t spacing = clock.TicksPerSecond() / 1000;
  Workload workload = MakeWorkload(4, 100, clock.Now() + spacing, spacing, 3);
  FakeFrameResolver frames;
  FakeThreadResolver threads;
  JfrWriterConfig config;
  config.repository = repository;
  config.chunk_size_bytes = 40000;
  config.flush_interval_nanos = 0;
  config.write_buffer_bytes = 512;  // unpublished bytes reach the file between flushes
  JfrWriterInputs inputs;
  inputs.clock = &clock;
  inputs.frames = &frames;
  inputs.threads = &threads;
  inputs.dictionary = workload.dictionary.get();
  inputs.attributes = workload.attributes.get();
  StatusOr<std::unique_ptr<JfrWriter>> writer = JfrWriter::Open(config, inputs);
  if (!writer.ok()) _exit(3);
  const char opened = 'o';
  if (write(report_fd, &opened, 1) != 1) _exit(6);
  static SampleRecord sample;
  const uint64_t period = workload.samples.size() * spacing;
  for (uint64_t round = 0;; round++) {
    for (size_t i = 0; i < workload.samples.size(); i++) {
      workload.Fill(i, &sample);
      sample.ticks += round * period;
      clock.Set(sample.ticks);
      if (!writer.value()->Add(sample).ok()) _exit(4);
      if (i % 100 == 99) {
        if (!writer.value()->Flush().ok()) _exit(5);
        const char flushed = 'f';
        if (write(report_fd, &flushed, 1) != 1) _exit(6);
      }
    }
  }
}

class CrashTest : public ::testing::TestWithParam<int> {};

TEST_P(CrashTest, KilledWriterLeavesReadableChunks) {
  const int flushes_before_kill = GetParam();
  const std::string repository = FreshPath("crash-" + std::to_string(flushes_before_kill));
  int report[2];
  ASSERT_EQ(pipe(report), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(report[0]);
    WriteUntilKilled(repository, report[1]);
  }
  close(report[1]);
  for (int i = 0; i <= flushes_before_kill; i++) {  // the open, then the flushes
    char byte;
    ASSERT_EQ(read(report[0], &byte, 1), 1) << "writer died after " << i << " reports";
  }
  // Killed while it writes the next batch (its bytes already go to the file unpublished).
  ASSERT_EQ(kill(child, SIGKILL), 0);
  int status;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "writer exited with " << status;
  close(report[0]);

  const std::vector<std::string> files = ListFolder(repository);
  ASSERT_FALSE(files.empty());
  if (flushes_before_kill >= 9) {
    EXPECT_GT(files.size(), 1u) << "no rotation before the kill";
  }
  size_t samples = 0;
  for (size_t f = 0; f < files.size(); f++) {
    const bool in_progress = f + 1 == files.size();
    JfrReader reader;
    if (!in_progress) {
      ASSERT_TRUE(IsOk(reader.Read(files[f], {})));
    } else if (reader.Read(files[f], {}).ok()) {
      // The last file is a finished chunk (generation 0) only when the kill came between a
      // chunk's end and the creation of the next file (JfrWriter::Rotate); it then reads whole.
      // The reader's refusal of an unfinished chunk is checked deterministically in
      // jfr_writer_reader_test.
      printf("the last file is a finished chunk: killed between two chunks\n");
    } else {
      // The writer is dead: a header it was patching (locked) is read as it says.
      JfrReader::Options options;
      options.allow_unfinished_chunks = true;
      options.read_locked_chunks = true;
      if (const Status read = reader.Read(files[f], options); !read.ok()) {
        // Only a chunk with nothing published yet may be unreadable: killed between creating
        // the file and writing its header (empty), or before its first flush.
        const std::string& error = read.message();
        EXPECT_TRUE(error.find("published no data yet") != std::string::npos ||
                    error.find("offset 0: empty file") != std::string::npos)
            << error;
        continue;
      }
    }
    for (const JfrEvent& event : reader.events()) {
      if (event.type_name() == "jdk.ExecutionSample" ||
          event.type_name() == "profiler.WallClockSample") {
        samples++;
      }
    }
  }
  // Every flushed sample is readable.
  EXPECT_GE(samples, static_cast<size_t>(flushes_before_kill) * 100);

  // The JDK never hangs on what is left: finished chunks parse, the one in progress either
  // parses (JDK 17) or fails with "stuck in locked stream state" (JDK 25).
  for (const std::string& tool : InstalledJfrTools()) {
    for (const char* command : {"summary", "print"}) {
      if (files.size() > 1) {
        EXPECT_EQ(RunJfr(tool, command, files.front()), 0) << tool;
      }
      const int last = RunJfr(tool, command, files.back());
      EXPECT_NE(last, 124) << tool << " " << command << " hung on " << files.back();
      EXPECT_LT(last, 128) << tool << " " << command << " crashed";
    }
  }
}

// 0: killed after the open, before the first flush; 1, 4: inside the first chunk; 9: after
// rotations.
INSTANTIATE_TEST_SUITE_P(Moments, CrashTest, ::testing::Values(0, 1, 4, 9));

TEST(WriteErrorTest, FullDiskIsAnErrorAndTheFileKeepsItsWholeChunks) {
  const std::string path = FreshPath("full-disk.jfr");
  int report[2];
  ASSERT_EQ(pipe(report), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(report[0]);
    signal(SIGXFSZ, SIG_IGN);  // get EFBIG instead of being killed
    const rlimit limit = {30000, 30000};
    if (setrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(2);
    FakeClock clock;
    const uint64_t spacing = clock.TicksPerSecond() / 1000;
    Workload workload = MakeWorkload(4, 500, clock.Now() + spacing, spacing, 9);
    FakeFrameResolver frames;
    FakeThreadResolver threads;
    JfrWriterConfig config;
    config.path = path;
    config.flush_interval_nanos = 100000000;
    config.write_buffer_bytes = 4096;
    JfrWriterInputs inputs{
        &clock, &frames, &threads, workload.dictionary.get(), workload.attributes.get(), {}};
    StatusOr<std::unique_ptr<JfrWriter>> opened = JfrWriter::Open(config, inputs);
    Status result = opened.status();
    JfrWriter* writer = opened.ok() ? opened.value().get() : nullptr;
    static SampleRecord sample;
    for (size_t i = 0; result.ok() && i < workload.samples.size(); i++) {
      workload.Fill(i, &sample);
      clock.Set(sample.ticks);
      result = writer->Add(sample);
    }
    if (result.ok()) result = writer->Close();
    const bool failed = !result.ok();
    // Later calls keep failing with the first error, and its errno.
    if (failed && writer != nullptr) {
      const Status again = writer->Close();
      if (again.ok() || again.message() != result.message() || again.os_error() != EFBIG) {
        _exit(7);
      }
    }
    const std::string& error = result.message();
    if (write(report[1], error.data(), error.size()) < 0) _exit(8);
    _exit(failed ? 0 : 1);
  }
  close(report[1]);
  std::string error;
  char buffer[512];
  ssize_t n;
  while ((n = read(report[0], buffer, sizeof(buffer))) > 0) error.append(buffer, n);
  close(report[0]);
  int status;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "writer did not report the full disk (status " << status << "): " << error;
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find("File too large"), std::string::npos) << error;

  // File mode appends whole chunks and cuts off the one that did not fit: the file is a
  // finished recording of everything published before the error, for every reader.
  JfrReader reader;
  ASSERT_TRUE(IsOk(reader.Read(path, {})));
  EXPECT_GT(reader.chunks().size(), 0u);
  size_t samples = 0;
  for (const JfrEvent& event : reader.events()) {
    samples += event.type_name() == "jdk.ExecutionSample" ? 1 : 0;
  }
  EXPECT_GT(samples, 0u);
  for (const std::string& tool : InstalledJfrTools()) {
    EXPECT_EQ(RunJfr(tool, "summary", path), 0) << tool << " cannot read the file left behind";
  }
}

TEST(WriteErrorTest, UnwritablePathNamesThePath) {
  FakeClock clock;
  Workload workload = MakeWorkload(1, 1, clock.Now(), 1, 1);
  FakeFrameResolver frames;
  FakeThreadResolver threads;
  JfrWriterConfig config;
  config.path = "/proc/version/recording.jfr";  // a file, not a folder: fails even for root
  JfrWriterInputs inputs{
      &clock, &frames, &threads, workload.dictionary.get(), workload.attributes.get(), {}};
  const StatusOr<std::unique_ptr<JfrWriter>> file = JfrWriter::Open(config, inputs);
  ASSERT_FALSE(file.ok());
  EXPECT_NE(
      file.status().message().find("cannot create recording file /proc/version/recording.jfr"),
      std::string::npos)
      << file.status().message();
  EXPECT_EQ(file.status().code(), StatusCode::kIo);
  EXPECT_NE(file.status().os_error(), 0);
  config.path.clear();
  config.repository = "/proc/version/repository";
  const StatusOr<std::unique_ptr<JfrWriter>> repository = JfrWriter::Open(config, inputs);
  ASSERT_FALSE(repository.ok());
  EXPECT_NE(repository.status().message().find("/proc/version/repository"), std::string::npos)
      << repository.status().message();
  EXPECT_NE(repository.status().os_error(), 0);
}

}  // namespace
}  // namespace ctxprof
