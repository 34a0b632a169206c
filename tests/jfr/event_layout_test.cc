// The sample events' layout variants (docs/JFR.md "Which reader reads what"): weights that
// readers without a weight field still count, wallsamples=jdk, contextId and its resolution
// within each chunk, the settings async-profiler's converter and Pyroscope read, thread keys,
// and the finished-chunk report an uploader gets.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "profiler/jfr/jfr_buffer.h"
#include "profiler/jfr/jfr_reader.h"
#include "profiler/recording/jfr_writer.h"
#include "profiler/recording/thread_pool.h"
#include "tests/jfr/synthetic.h"

namespace ctxprof {
namespace {

struct LayoutRecorder {
  FakeClock clock;
  FakeFrameResolver frames;
  FakeThreadResolver threads;
  Workload workload = MakeWorkload(2, 6, clock.Now() + 1000, clock.TicksPerSecond() / 1000, 3);
  JfrWriterConfig config;
  std::vector<FinishedChunk> finished;
  std::unique_ptr<JfrWriter> writer;

  explicit LayoutRecorder(const std::string& name) {
    config.path = FreshPath(name);
    config.engine = "cpu+wall";
    config.interval_nanos = 10000000;
    config.wall_interval_nanos = 50000000;
  }
  void Open() {
    JfrWriterInputs inputs = workload.Inputs(&clock, &frames, &threads);
    inputs.on_chunk_finished = [this](FinishedChunk&& chunk) {
      finished.push_back(std::move(chunk));
    };
    std::string error;
    writer = JfrWriter::Open(config, inputs, &error);
    ASSERT_NE(writer, nullptr) << error;
  }
  // Adds workload sample `i` with its kind and weight replaced.
  void Add(size_t i, SampleKind kind, uint32_t weight) {
    static SampleRecord sample;
    workload.Fill(i, &sample);
    sample.kind = kind;
    sample.state = kind == SampleKind::kWall ? ThreadState::kSleeping : ThreadState::kRunning;
    sample.weight = weight;
    clock.Set(sample.ticks);
    std::string error;
    ASSERT_TRUE(writer->Add(sample, &error)) << error;
  }
  void Close(JfrReader* reader) {
    clock.Advance(clock.TicksPerSecond());
    std::string error;
    ASSERT_TRUE(writer->Close(&error)) << error;
    const std::string path =
        config.path.empty() ? ListFolder(config.repository).front() : config.path;
    ASSERT_TRUE(reader->Read(path, {}, &error)) << error;
  }
};

std::map<std::string, int> CountTypes(const JfrReader& reader) {
  std::map<std::string, int> counts;
  for (const JfrEvent& event : reader.events()) counts[event.type_name()]++;
  return counts;
}

// jdk.ExecutionSample has no weight field and every reader counts each one as one interval:
// a CPU sample standing for 3 intervals (timer overruns) is written as 3 events.
TEST(EventLayoutTest, CpuWeightBecomesRepeatedExecutionSamples) {
  LayoutRecorder recorder("cpu_weight.jfr");
  recorder.Open();
  recorder.Add(0, SampleKind::kCpu, 3);
  recorder.Add(1, SampleKind::kWall, 2);
  JfrReader reader;
  recorder.Close(&reader);
  std::map<std::string, int> counts = CountTypes(reader);
  EXPECT_EQ(counts["jdk.ExecutionSample"], 3);
  EXPECT_EQ(counts["profiler.WallClockSample"], 1);
  for (const JfrEvent& event : reader.events()) {
    if (event.type_name() == "jdk.ExecutionSample") {
      EXPECT_EQ(event.Field("state").string(), "STATE_DEFAULT");
      EXPECT_EQ(event.Field("sampledThread").Field("osThreadId").integer(),
                recorder.workload.samples[0].tid);
    } else if (event.type_name() == "profiler.WallClockSample") {
      EXPECT_EQ(event.Field("state").string(), "STATE_SLEEPING");
      EXPECT_EQ(event.Field("samples").integer(), 2);
      EXPECT_EQ(event.Field("timeSpan").integer(), 0);
      EXPECT_FALSE(event.Field("eventThread").is_null());
    }
  }
}

TEST(EventLayoutTest, WallSamplesAsNativeMethodSamples) {
  LayoutRecorder recorder("wall_jdk.jfr");
  recorder.config.wall_samples = WallSampleEvent::kJdk;
  recorder.Open();
  recorder.Add(0, SampleKind::kWall, 2);
  recorder.Add(1, SampleKind::kCpu, 1);
  JfrReader reader;
  recorder.Close(&reader);
  std::map<std::string, int> counts = CountTypes(reader);
  EXPECT_EQ(counts["jdk.NativeMethodSample"], 2);
  EXPECT_EQ(counts["jdk.ExecutionSample"], 1);
  EXPECT_EQ(counts.count("profiler.WallClockSample"), 0u);
  for (const JfrEvent& event : reader.events()) {
    if (event.type_name() != "jdk.NativeMethodSample") continue;
    EXPECT_EQ(event.Field("state").string(), "STATE_SLEEPING");
    EXPECT_FALSE(event.Field("sampledThread").is_null());  // jfrview requires this name
    EXPECT_TRUE(event.Field("contextId").is_null());
  }
}

// contextid=true: every sample's contextId is the contextId of the ctxprof.Context event that
// covers it (0 without context); a chunk resolves its own ids, and ids are never reused.
TEST(EventLayoutTest, ContextIdsResolveWithinEachChunk) {
  LayoutRecorder recorder("context_ids.jfr");
  recorder.config.context_id = true;
  recorder.Open();
  const size_t count = recorder.workload.samples.size();
  for (size_t i = 0; i < count; i++) {
    if (i == count / 2) {
      std::string error;
      ASSERT_TRUE(recorder.writer->Rotate(&error)) << error;
    }
    recorder.Add(i, i % 2 == 0 ? SampleKind::kCpu : SampleKind::kWall, 1);
  }
  JfrReader reader;
  recorder.Close(&reader);
  ASSERT_EQ(reader.chunks().size(), 2u);
  std::map<uint32_t, std::set<int64_t>> ids_of_chunk;
  int with_context = 0;
  for (const JfrEvent& event : reader.events()) {
    const std::string& type = event.type_name();
    if (type == "ctxprof.Context") {
      EXPECT_GT(event.Field("contextId").integer(), 0);
      ids_of_chunk[event.chunk].insert(event.Field("contextId").integer());
      continue;
    }
    if (type != "jdk.ExecutionSample" && type != "profiler.WallClockSample") continue;
    const JfrValue& context_id = event.Field("contextId");
    ASSERT_FALSE(context_id.is_null()) << type;
    const JfrEvent* context =
        reader.ContextAt(event.thread().Field("osThreadId").integer(), event.start_ticks());
    if (context == nullptr) {
      EXPECT_EQ(context_id.integer(), 0);
      continue;
    }
    with_context++;
    EXPECT_EQ(context_id.integer(), context->Field("contextId").integer());
    EXPECT_EQ(context->chunk, event.chunk);
  }
  EXPECT_GT(with_context, 0);
  for (int64_t id : ids_of_chunk[1]) EXPECT_EQ(ids_of_chunk[0].count(id), 0u) << id;
}

TEST(EventLayoutTest, ActiveSettingsDescribeTheSession) {
  LayoutRecorder recorder("settings.jfr");
  recorder.Open();
  recorder.Add(0, SampleKind::kCpu, 1);
  JfrReader reader;
  recorder.Close(&reader);
  std::map<std::string, std::string> settings;
  for (const JfrEvent& event : reader.events()) {
    if (event.type_name() == "jdk.ActiveSetting") {
      settings[event.Field("name").string()] = event.Field("value").string();
    }
  }
  EXPECT_EQ(settings, (std::map<std::string, std::string>{
                          {"event", "cpu"}, {"interval", "10000000"}, {"wall", "50000000"}}));
}

// Readers that do not look inside the thread pool show its key as the thread id.
TEST(EventLayoutTest, ThreadKeysAreOsThreadIds) {
  struct NamedResolver : ThreadResolver {
    std::string name = "first";
    void Resolve(int32_t, ResolvedThread* out) override { out->name = name; }
  } resolver;
  ThreadPool pool(&resolver);
  uint64_t pending = 0;
  EXPECT_EQ(pool.Key(1234, 0, 1, &pending), 1234u);
  EXPECT_EQ(pool.Key(77, 0, 1, &pending), 77u);
  EXPECT_EQ(pool.Key(1234, 0, 2, &pending), 1234u);  // same identity in the next chunk
  resolver.name = "renamed";
  const uint32_t renamed = pool.Key(1234, 0, 3, &pending);
  EXPECT_GE(renamed, ThreadPool::kFirstSpareKey);
  EXPECT_EQ(pool.Key(1234, 0, 3, &pending), renamed);
  EXPECT_NE(pool.Key(77, 0, 4, &pending), renamed);
}

TEST(EventLayoutTest, FinishedChunksCarryTheirContexts) {
  LayoutRecorder recorder("unused");
  recorder.config.path.clear();
  recorder.config.repository = FreshPath("finished_repository");
  recorder.config.context_id = true;
  recorder.Open();
  for (size_t i = 0; i < recorder.workload.samples.size(); i++) {
    recorder.Add(i, SampleKind::kCpu, 1);
  }
  JfrReader reader;
  recorder.Close(&reader);
  ASSERT_EQ(recorder.finished.size(), 1u);
  const FinishedChunk& chunk = recorder.finished[0];
  EXPECT_EQ(chunk.path, ListFolder(recorder.config.repository).front());
  EXPECT_EQ(chunk.start_epoch_nanos, reader.chunks()[0].start_nanos);
  EXPECT_EQ(chunk.end_epoch_nanos, reader.chunks()[0].start_nanos +
                                       static_cast<int64_t>(reader.chunks()[0].duration_nanos));
  // Each reported context has the labels of the ctxprof.Context events with its id.
  std::map<int64_t, std::map<std::string, std::string>> labels_of_id;
  for (const FinishedChunk::Context& context : chunk.contexts) {
    for (const FinishedChunk::Label& label : context.labels) {
      labels_of_id[static_cast<int64_t>(context.id)][label.name] = label.value;
    }
  }
  int checked = 0;
  for (const JfrEvent& event : reader.events()) {
    if (event.type_name() != "ctxprof.Context") continue;
    const auto found = labels_of_id.find(event.Field("contextId").integer());
    ASSERT_NE(found, labels_of_id.end());
    std::map<std::string, std::string> want;
    for (const auto& [name, field] :
         std::map<std::string, std::string>{{"trace_id", "traceId"}, {"span_id", "spanId"}}) {
      if (!event.Field(field).is_null()) want[name] = event.Field(field).string();
    }
    for (int slot = 0; slot < recorder.workload.attributes->size(); slot++) {
      const std::string field =
          JfrMetadata::FieldNameOf(recorder.workload.attributes->NameOf(slot));
      if (!event.Field(field).is_null()) want[field] = event.Field(field).string();
    }
    EXPECT_EQ(found->second, want);
    checked++;
  }
  EXPECT_GT(checked, 0);
}

}  // namespace
}  // namespace ctxprof
