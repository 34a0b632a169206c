// Repository mode: one file per chunk, rotation by size and time, retention by size and age.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>

#include "profiler/jfr/jfr_reader.h"
#include "profiler/jfr_events/jfr_writer.h"
#include "tests/jfr/synthetic.h"
#include "tests/support/status_testing.h"

namespace ctxprof {
namespace {

uint64_t FileSize(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

class RepositoryTest : public ::testing::Test {
 protected:
  RepositoryTest() : workload_(MakeWorkload(6, 200, clock_.Now() + kMilli, kMilli, 11)) {
    config_.engine = "wall";
  }
  JfrWriterInputs Inputs() {
    JfrWriterInputs inputs;
    inputs.clock = &clock_;
    inputs.frames = &frames_;
    inputs.threads = &threads_;
    inputs.dictionary = workload_.dictionary.get();
    inputs.attributes = workload_.attributes.get();
    return inputs;
  }
  // Writes the workload; returns the number of samples written.
  size_t WriteAll() {
    StatusOr<std::unique_ptr<JfrWriter>> opened = JfrWriter::Open(config_, Inputs());
    EXPECT_TRUE(IsOk(opened));
    std::unique_ptr<JfrWriter> writer = opened.ok() ? std::move(opened.value()) : nullptr;
    if (writer == nullptr) return 0;
    static SampleRecord sample;
    for (size_t i = 0; i < workload_.samples.size(); i++) {
      workload_.Fill(i, &sample);
      clock_.Set(sample.ticks);
      EXPECT_TRUE(IsOk(writer->Add(sample)));
    }
    clock_.Advance(kMilli);
    EXPECT_TRUE(IsOk(writer->Close()));
    chunks_finished_ = writer->chunks_finished();
    finished_files_ = writer->finished_chunk_files();
    return workload_.samples.size();
  }
  // Reads one chunk file on its own; returns its sample count.
  static size_t SamplesIn(const std::string& path) {
    JfrReader reader;
    EXPECT_TRUE(IsOk(reader.Read(path, {})));
    EXPECT_EQ(reader.chunks().size(), 1u) << path;
    size_t samples = 0;
    for (const JfrEvent& event : reader.events()) {
      const std::string& type = event.type_name();
      if (type == "jdk.ExecutionSample" || type == "profiler.WallClockSample") {
        samples++;
        // Every stack resolves within the chunk file alone (the workload has one empty stack).
        const JfrValue& stack = event.Field("stackTrace");
        EXPECT_FALSE(stack.is_null()) << path;
        for (const JfrFrame& frame : JfrReader::FramesOf(stack)) {
          EXPECT_FALSE(frame.method_name.empty()) << path;
        }
      }
    }
    return samples;
  }

  static constexpr uint64_t kMilli = 2400000;  // ticks of the 2.4 GHz fake clock
  FakeClock clock_;
  FakeFrameResolver frames_;
  FakeThreadResolver threads_;
  Workload workload_;
  JfrWriterConfig config_;
  uint64_t chunks_finished_ = 0;
  std::vector<std::string> finished_files_;
};

TEST_F(RepositoryTest, ChunkSizeRotationWritesSelfContainedChunkFiles) {
  config_.repository = FreshPath("repo-size");
  config_.chunk_size_bytes = 16384;
  const size_t written = WriteAll();
  const std::vector<std::string> files = ListFolder(config_.repository);
  ASSERT_GT(files.size(), 3u);
  EXPECT_EQ(files.size(), chunks_finished_);
  EXPECT_EQ(files, finished_files_);
  size_t samples = 0;
  for (const std::string& file : files) {
    samples += SamplesIn(file);
    struct stat st;
    ASSERT_EQ(stat(file.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u) << file;
  }
  EXPECT_EQ(samples, written);
  struct stat st;
  ASSERT_EQ(stat(config_.repository.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST_F(RepositoryTest, ChunkTimeRotation) {
  config_.repository = FreshPath("repo-time");
  config_.chunk_time_nanos = 300000000;  // 0.3 s; the workload spans 1.2 s
  WriteAll();
  const std::vector<std::string> files = ListFolder(config_.repository);
  // Samples at 1 ms .. 1200 ms in 0.3 s chunks. A chunk starts where the previous one ended,
  // 2 ns after its last sample (the end of its last context interval), so the rotations happen
  // at the samples of 300, 601 and 902 ms: four chunks.
  EXPECT_EQ(files.size(), 4u);
  for (const std::string& file : files) {
    JfrReader reader;
    ASSERT_TRUE(IsOk(reader.Read(file, {})));
    // A chunk ends with the first sample at or after its deadline.
    EXPECT_LE(reader.chunks()[0].duration_nanos, 300000000u + 1000000u) << file;
  }
}

TEST_F(RepositoryTest, MaxSizeDeletesOldestChunksFirst) {
  config_.repository = FreshPath("repo-maxsize");
  config_.chunk_size_bytes = 16384;
  config_.max_size_bytes = 60000;
  WriteAll();
  const std::vector<std::string> files = ListFolder(config_.repository);
  ASSERT_FALSE(files.empty());
  EXPECT_LT(files.size(), chunks_finished_);
  EXPECT_EQ(files, finished_files_);
  uint64_t total = 0;
  for (const std::string& file : files) {
    total += FileSize(file);
    SamplesIn(file);
  }
  EXPECT_LE(total, config_.max_size_bytes);
  // What remains are the newest chunks: the last sequence number, contiguous.
  char last[32];
  snprintf(last, sizeof(last), "ctxprof-%06llu.jfr",
           static_cast<unsigned long long>(chunks_finished_));
  EXPECT_EQ(files.back(), config_.repository + "/" + last);
  char first[32];
  snprintf(first, sizeof(first), "ctxprof-%06llu.jfr",
           static_cast<unsigned long long>(chunks_finished_ - files.size() + 1));
  EXPECT_EQ(files.front(), config_.repository + "/" + first);
}

TEST_F(RepositoryTest, MaxAgeDeletesChunksThatEndedTooLongAgo) {
  config_.repository = FreshPath("repo-maxage");
  config_.chunk_time_nanos = 200000000;
  config_.max_age_nanos = 500000000;
  StatusOr<std::unique_ptr<JfrWriter>> opened = JfrWriter::Open(config_, Inputs());
  ASSERT_TRUE(IsOk(opened));
  std::unique_ptr<JfrWriter> writer = std::move(opened.value());
  static SampleRecord sample;
  for (size_t i = 0; i < workload_.samples.size(); i++) {
    workload_.Fill(i, &sample);
    clock_.Set(sample.ticks);
    ASSERT_TRUE(IsOk(writer->Add(sample)));
  }
  ASSERT_TRUE(IsOk(writer->Rotate()));
  const size_t before = ListFolder(config_.repository).size();
  // 0.6 s later only chunks that ended after now - 0.5 s survive. The Tick itself ends the
  // chunk opened by Rotate (its chunk_time passed): that one ends now and stays, beside the new
  // chunk in progress.
  clock_.Advance(600000 * kMilli / 1000);
  ASSERT_TRUE(IsOk(writer->Tick()));
  const std::vector<std::string> files = ListFolder(config_.repository);
  EXPECT_LT(files.size(), before);
  ASSERT_EQ(writer->finished_chunk_files().size(), 1u);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0], writer->finished_chunk_files()[0]);
  ASSERT_TRUE(IsOk(writer->Close()));
  for (const std::string& file : files) SamplesIn(file);
}

TEST_F(RepositoryTest, SecondSessionContinuesTheSequence) {
  config_.repository = FreshPath("repo-twice");
  config_.chunk_size_bytes = 16384;
  WriteAll();
  const std::vector<std::string> first = ListFolder(config_.repository);
  workload_ = MakeWorkload(6, 20, clock_.Now() + kMilli, kMilli, 12);
  WriteAll();
  const std::vector<std::string> both = ListFolder(config_.repository);
  ASSERT_EQ(both.size(), first.size() + finished_files_.size());
  EXPECT_TRUE(std::equal(first.begin(), first.end(), both.begin()));  // untouched, still first
  for (const std::string& file : both) SamplesIn(file);
}

TEST_F(RepositoryTest, RepositoryThatIsAFileIsAnError) {
  config_.repository = FreshPath("repo-file");
  ASSERT_EQ(system(("touch '" + config_.repository + "'").c_str()), 0);
  const StatusOr<std::unique_ptr<JfrWriter>> opened = JfrWriter::Open(config_, Inputs());
  ASSERT_FALSE(opened.ok());
  const std::string& error = opened.status().message();
  EXPECT_NE(error.find(config_.repository + " is not a folder"), std::string::npos) << error;
  EXPECT_EQ(opened.status().os_error(), ENOTDIR);
}

}  // namespace
}  // namespace ctxprof
