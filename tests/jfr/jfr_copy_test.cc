// CopyChunks leaving records out (jfrsync= with select=if-context): a chunk with several
// checkpoints, rewritten without every third CPU sample, reads back with every other event, its
// stack and thread as before (the checkpoint chain and the header's offsets moved right).
#include "profiler/jfr/jfr_copy.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "profiler/jfr/jfr_reader.h"
#include "tests/jfr/synthetic.h"

namespace ctxprof {
namespace {

std::string OnlyFileIn(const std::string& folder) {
  std::vector<std::string> names;
  if (DIR* dir = opendir(folder.c_str())) {
    while (dirent* entry = readdir(dir)) {
      if (entry->d_name[0] != '.') names.push_back(folder + "/" + entry->d_name);
    }
    closedir(dir);
  }
  EXPECT_EQ(names.size(), 1u) << folder;
  return names.empty() ? "" : names[0];
}

// What a kept event must still be: its type, time, thread and stack.
std::string Describe(const JfrEvent& event) {
  std::string text = event.type_name() + "@" + std::to_string(event.start_ticks());
  const JfrValue& thread = event.thread();
  if (!thread.is_null()) text += " tid " + std::to_string(thread.Field("osThreadId").integer());
  const JfrValue& stack = event.Field("stackTrace");
  if (!stack.is_null()) {
    for (const JfrFrame& frame : JfrReader::FramesOf(stack)) text += " " + frame.method_name;
  }
  return text;
}

TEST(JfrCopyTest, LeavesOutGivenEventsAndKeepsEverythingElse) {
  FakeClock clock;
  const uint64_t spacing = clock.TicksPerSecond() / 1000;  // 1 ms
  const Workload workload = MakeWorkload(4, 200, clock.Now() + spacing, spacing, 7);
  JfrWriterConfig config;
  config.repository = FreshPath("jfr_copy_source");
  config.flush_interval_nanos = 50 * 1000 * 1000;  // ~16 checkpoints in the one chunk
  config.engine = "cpu";
  config.interval_nanos = 1000000;
  ASSERT_TRUE(WriteWorkload(workload, &clock, spacing, config, [] { return uint64_t{0}; }).ok());
  const std::string source = OnlyFileIn(config.repository);

  JfrReader before;
  ASSERT_TRUE(before.Read(source, JfrReader::Options()).ok());
  ASSERT_EQ(before.chunks().size(), 1u);
  std::vector<uint64_t> drop;
  std::vector<std::string> kept;
  size_t samples = 0;
  for (const JfrEvent& event : before.events()) {
    if (event.type_name() == "jdk.ExecutionSample" && samples++ % 3 == 0) {
      drop.push_back(event.file_offset);
    } else {
      kept.push_back(Describe(event));
    }
  }
  ASSERT_GT(drop.size(), 100u);

  const int fd = open(source.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  struct stat file;
  ASSERT_EQ(fstat(fd, &file), 0);
  const std::string copy = FreshPath("jfr_copy_copy.jfr");
  const Status copied =
      CopyChunks({JfrCopySource{source, fd, static_cast<uint64_t>(file.st_size), drop}}, copy);
  close(fd);
  ASSERT_TRUE(copied.ok()) << copied.message();

  JfrReader after;
  const Status read = after.Read(copy, JfrReader::Options());
  ASSERT_TRUE(read.ok()) << read.message();
  std::vector<std::string> found;
  for (const JfrEvent& event : after.events()) found.push_back(Describe(event));
  EXPECT_EQ(found, kept);
  ASSERT_EQ(after.chunks().size(), 1u);
  EXPECT_LT(after.chunks()[0].size, before.chunks()[0].size);
}

// What jfr_append reads: each event's leading fields only (times and thread), the same events.
TEST(JfrCopyTest, TheReaderDecodesLeadingFieldsOnly) {
  FakeClock clock;
  const uint64_t spacing = clock.TicksPerSecond() / 1000;
  const Workload workload = MakeWorkload(2, 50, clock.Now() + spacing, spacing, 3);
  JfrWriterConfig config;
  config.path = FreshPath("jfr_copy_leading.jfr");
  config.engine = "cpu";
  config.interval_nanos = 1000000;
  ASSERT_TRUE(WriteWorkload(workload, &clock, spacing, config, [] { return uint64_t{0}; }).ok());
  JfrReader whole;
  ASSERT_TRUE(whole.Read(config.path, JfrReader::Options()).ok());
  JfrReader::Options options;
  options.leading_fields = 2;
  JfrReader leading;
  ASSERT_TRUE(leading.Read(config.path, options).ok());
  ASSERT_EQ(leading.events().size(), whole.events().size());
  size_t samples = 0;
  for (size_t i = 0; i < whole.events().size(); i++) {
    const JfrEvent& event = leading.events()[i];
    EXPECT_EQ(event.start_ticks(), whole.events()[i].start_ticks());
    EXPECT_EQ(event.file_offset, whole.events()[i].file_offset);
    if (event.type_name() != "jdk.ExecutionSample") continue;
    samples++;
    EXPECT_EQ(event.thread().Field("osThreadId").integer(),
              whole.events()[i].thread().Field("osThreadId").integer());
    EXPECT_TRUE(event.Field("stackTrace").is_null());
    EXPECT_FALSE(whole.events()[i].Field("stackTrace").is_null());
  }
  EXPECT_GT(samples, 20u);
}

}  // namespace
}  // namespace ctxprof
