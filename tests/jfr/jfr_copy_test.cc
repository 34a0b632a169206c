// CopyChunks leaving records out (jfrsync= with select=if-context): a chunk with several
// checkpoints, rewritten without every third CPU sample, reads back with every other event, its
// stack and thread as before (the checkpoint chain and the header's offsets moved right).
// CompactChunks packing the pools of a file folded into one chunk: the same frames, method keys by
// use, C++ parameter lists only where they tell overloads apart.
#include "profiler/jfr/jfr_copy.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "profiler/jfr/jfr_metadata.h"
#include "profiler/jfr/jfr_reader.h"
#include "profiler/jfr/native_method.h"
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

// Native frames name the C++ symbols below (index = frame id); Java frames are methods of one
// class, method 1 with a descriptor shaped like a C++ parameter list's.
class OverloadResolver : public FrameResolver {
 public:
  static constexpr const char* kSymbols[] = {"Foo::bar(int)", "Foo::bar(long)", "Foo::baz(bool)",
                                             "Foo::qux() const", "plain"};
  void Resolve(const RawFrame& frame, ResolvedFrame* out) override {
    if (frame.kind == FrameKind::kNative) {
      out->class_name = "libfake.so";
      SplitNativeSymbol(kSymbols[frame.id], &out->method_name, &out->descriptor);
      out->type = JfrFrameType::kNative;
      return;
    }
    out->class_name = "com/example/Foo";
    out->method_name = "method" + std::to_string(frame.id);
    out->descriptor = frame.id == 1 ? "(LFoo;)V" : "(I)V";
    out->line_number = 10;
    out->type = JfrFrameType::kJitCompiled;
  }
};

std::vector<uint8_t> Bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

void Write(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

// The frames of every sample, in file order; the allocated class of every allocation sample
// (java.lang.Class, which events refer to: packing leaves its keys as they are) to *classes.
std::vector<std::vector<JfrFrame>> SampleFrames(const std::string& path,
                                                std::vector<std::string>* classes) {
  JfrReader reader;
  EXPECT_TRUE(reader.Read(path, JfrReader::Options()).ok()) << path;
  EXPECT_EQ(reader.chunks().size(), 1u) << path;
  std::vector<std::vector<JfrFrame>> frames;
  for (const JfrEvent& event : reader.events()) {
    if (event.type_name() == "jdk.ExecutionSample") {
      frames.push_back(JfrReader::FramesOf(event.Field("stackTrace")));
    } else if (event.type_name() == "jdk.ObjectAllocationSample") {
      classes->push_back(event.Field("objectClass").Field("name").string());
    }
  }
  return frames;
}

TEST(JfrCopyTest, FoldingTheWholeFilePacksItsPools) {
  const auto java = [](uint64_t method) { return RawFrame{method, 3, FrameKind::kJavaJit}; };
  const auto cpp = [](uint64_t symbol) { return RawFrame{symbol, -1, FrameKind::kNative}; };
  Workload workload;
  std::string error;
  workload.dictionary = Dictionary::Create(Dictionary::Options{}, &error);
  ASSERT_NE(workload.dictionary, nullptr) << error;
  // 200 cold methods first, so that in the streamed pools the hot method 2 comes after key 127;
  // then the hot method 20 deep under every C++ symbol and under 50 other leaves.
  for (uint64_t cold = 0; cold < 200; cold++) workload.stacks.push_back({java(1000 + cold)});
  const std::vector<RawFrame> hot(20, java(2));
  for (const std::vector<RawFrame>& leaves : std::vector<std::vector<RawFrame>>{
           {cpp(0)}, {cpp(1)}, {cpp(2)}, {cpp(3), cpp(4), java(1)}}) {
    workload.stacks.push_back(leaves);
    workload.stacks.back().insert(workload.stacks.back().end(), hot.begin(), hot.end());
  }
  for (uint64_t leaf = 0; leaf < 50; leaf++) {
    workload.stacks.push_back({java(3000 + leaf)});
    workload.stacks.back().insert(workload.stacks.back().end(), hot.begin(), hot.end());
  }
  const size_t hot_frames = 54 * hot.size();
  workload.stack_truncated.assign(workload.stacks.size(), false);
  FakeClock clock;
  const uint64_t spacing = clock.TicksPerSecond() / 1000;
  for (uint32_t stack = 0; stack < workload.stacks.size(); stack++) {
    workload.samples.push_back(
        ExpectedSample{SampleKind::kCpu, 101, clock.Now() + (stack + 1) * spacing, stack, -1});
  }

  JfrWriterConfig config;
  config.path = FreshPath("jfr_copy_packed.jfr");
  config.engine = "cpu";
  config.interval_nanos = 1000000;
  OverloadResolver frames;
  FakeThreadResolver threads;
  workload.class_names = Dictionary::Create(Dictionary::Options{}, &error);
  ASSERT_NE(workload.class_names, nullptr) << error;
  JfrWriterInputs inputs = workload.Inputs(&clock, &frames, &threads);
  inputs.class_names = workload.class_names.get();
  StatusOr<std::unique_ptr<JfrWriter>> opened = JfrWriter::Open(config, inputs);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  JfrWriter& writer = *opened.value();
  static SampleRecord sample;
  for (size_t i = 0; i < workload.samples.size(); i++) {
    workload.Fill(i, &sample);
    clock.Set(sample.ticks);
    ASSERT_TRUE(writer.Add(sample).ok());
    if (i % 10 == 0) {  // an allocation sample on the same stack
      sample.kind = SampleKind::kAllocation;
      sample.engine = Engine::kRuntime;
      sample.event.amount = 524288;
      sample.event.object_bytes = 24;
      sample.event.class_id = workload.class_names->Intern(i % 20 == 0 ? "[B" : "java/lang/String");
      sample.event.park_time = kNoParkTimeout;
      sample.event.object_ref = 0;
      ASSERT_TRUE(writer.Add(sample).ok());
    }
    if (i % 50 == 49) ASSERT_TRUE(writer.Flush().ok());  // a chunk per flush, folded at Close
  }
  ASSERT_TRUE(writer.Flush().ok());
  const std::string plain = config.path + ".plain";
  Write(plain, Bytes(config.path));  // the chunks as streamed
  clock.Advance(spacing);
  ASSERT_TRUE(writer.Close().ok());
  JfrCompactOptions fold_only;  // the same fold without packing
  ASSERT_TRUE(CompactChunks(plain, fold_only).ok());

  std::vector<std::string> want_classes, got_classes;
  const std::vector<std::vector<JfrFrame>> want = SampleFrames(plain, &want_classes);
  const std::vector<std::vector<JfrFrame>> got = SampleFrames(config.path, &got_classes);
  ASSERT_EQ(got.size(), workload.samples.size());
  ASSERT_EQ(got_classes.size(), (workload.samples.size() + 9) / 10);
  EXPECT_EQ(got_classes, want_classes);
  EXPECT_EQ(got_classes[0], "[B");
  EXPECT_EQ(got_classes[1], "java/lang/String");
  ASSERT_EQ(want.size(), got.size());
  std::vector<std::string> native;  // the whole symbols, as ctxprof's tools join them
  for (size_t s = 0; s < got.size(); s++) {
    ASSERT_EQ(want[s].size(), got[s].size()) << "sample " << s;
    for (size_t f = 0; f < got[s].size(); f++) {
      const JfrFrame& a = want[s][f];
      const JfrFrame& b = got[s][f];
      EXPECT_EQ(a.class_name, b.class_name);
      EXPECT_EQ(a.method_name, b.method_name);
      EXPECT_EQ(a.line_number, b.line_number);
      EXPECT_EQ(a.bytecode_index, b.bytecode_index);
      EXPECT_EQ(a.type, b.type);
      EXPECT_EQ(a.descriptor, b.descriptor);
      if (b.type == "Native") native.push_back(JoinNativeSymbol(b.method_name, b.descriptor));
    }
  }
  // C++ names through renumbered symbols: each is the symbol it was, parameter lists and all
  // (which name a frame must not depend on what else a recording holds).
  EXPECT_EQ(native, (std::vector<std::string>{"Foo::bar(int)", "Foo::bar(long)", "Foo::baz(bool)",
                                              "Foo::qux() const", "plain"}));
  // Every frame of the hot method takes a 1-byte key instead of 2.
  const size_t plain_bytes = Bytes(plain).size();
  const size_t packed_bytes = Bytes(config.path).size();
  EXPECT_GE(plain_bytes, packed_bytes + hot_frames)
      << plain_bytes << " bytes folded, " << packed_bytes << " packed";
}

}  // namespace
}  // namespace ctxprof
