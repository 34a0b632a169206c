// The sample events' layout variants (docs/JFR.md "Which reader reads what"): weights that
// readers without a weight field still count, wallsamples=jdk, contextId and its resolution
// within each chunk, the settings async-profiler's converter and Pyroscope read, thread keys,
// and the finished-chunk report an uploader gets.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "profiler/jfr/jfr_buffer.h"
#include "profiler/jfr/jfr_reader.h"
#include "profiler/jfr_events/jfr_writer.h"
#include "profiler/jfr_events/live_objects.h"
#include "profiler/jfr_events/thread_pool.h"
#include "tests/jfr/synthetic.h"
#include "tests/status_testing.h"

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
    StatusOr<std::unique_ptr<JfrWriter>> opened = JfrWriter::Open(config, inputs);
    ASSERT_TRUE(IsOk(opened));
    writer = std::move(opened.value());
  }
  // Adds workload sample `i` with its kind and weight replaced.
  void Add(size_t i, SampleKind kind, uint32_t weight) {
    static SampleRecord sample;
    workload.Fill(i, &sample);
    sample.kind = kind;
    sample.state = kind == SampleKind::kWall ? ThreadState::kSleeping : ThreadState::kRunning;
    sample.weight = weight;
    clock.Set(sample.ticks);
    ASSERT_TRUE(IsOk(writer->Add(sample)));
  }
  void Close(JfrReader* reader) {
    clock.Advance(clock.TicksPerSecond());
    ASSERT_TRUE(IsOk(writer->Close()));
    const std::string path =
        config.path.empty() ? ListFolder(config.repository).front() : config.path;
    ASSERT_TRUE(IsOk(reader->Read(path, {})));
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
      ASSERT_TRUE(IsOk(recorder.writer->Rotate()));
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

// The jdk.ActiveSetting events of a recording: name -> value.
std::map<std::string, std::string> ActiveSettings(const JfrReader& reader) {
  std::map<std::string, std::string> settings;
  for (const JfrEvent& event : reader.events()) {
    if (event.type_name() == "jdk.ActiveSetting") {
      settings[event.Field("name").string()] = event.Field("value").string();
    }
  }
  return settings;
}

TEST(EventLayoutTest, ActiveSettingsDescribeTheSession) {
  LayoutRecorder recorder("settings.jfr");
  recorder.Open();
  recorder.Add(0, SampleKind::kCpu, 1);
  JfrReader reader;
  recorder.Close(&reader);
  EXPECT_EQ(ActiveSettings(reader),
            (std::map<std::string, std::string>{
                {"event", "cpu"}, {"interval", "10000000"}, {"wall", "50000000"}}));
}

TEST(EventLayoutTest, ActiveSettingsOfRuntimeEventsWithoutSampling) {
  LayoutRecorder recorder("settings_events.jfr");
  recorder.config.engine = "";  // event=alloc+lock: no CPU or wall engine
  recorder.config.interval_nanos = 0;
  recorder.config.wall_interval_nanos = 0;
  recorder.config.alloc_interval_bytes = 524288;
  recorder.config.lock_threshold_nanos = 10000000;
  recorder.Open();
  JfrReader reader;
  recorder.Close(&reader);
  EXPECT_EQ(ActiveSettings(reader),
            (std::map<std::string, std::string>{{"alloc", "524288"}, {"lock", "10000000"}}));
}

// A tracker whose every object stays alive; counts what it is given back.
struct KeepAliveTracker : ObjectTracker {
  bool Alive(uint64_t) override { return true; }
  void Release(uint64_t) override { released++; }
  int released = 0;
};

// contextid=true covers the runtime events like the samples: an allocation's contextId is its
// context's, a wait's is the context of the interval that covers it from start to end, and a
// live object written in the last chunk carries an id that chunk resolves, to the context it
// was allocated in, although that context's run was in the first chunk. The repository's last
// chunk file alone joins it.
TEST(EventLayoutTest, RuntimeEventsCarryContextIdsThatTheirChunkResolves) {
  LayoutRecorder recorder("unused");
  recorder.config.path.clear();
  recorder.config.repository = FreshPath("runtime_context_ids");
  recorder.config.context_id = true;
  Workload& workload = recorder.workload;
  std::string error;
  workload.class_names = Dictionary::Create(Dictionary::Options{}, &error);
  ASSERT_NE(workload.class_names, nullptr) << error;
  KeepAliveTracker tracker;
  JfrWriterInputs inputs = workload.Inputs(&recorder.clock, &recorder.frames, &recorder.threads);
  inputs.class_names = workload.class_names.get();
  inputs.objects = &tracker;
  StatusOr<std::unique_ptr<JfrWriter>> opened = JfrWriter::Open(recorder.config, inputs);
  ASSERT_TRUE(IsOk(opened));
  recorder.writer = std::move(opened.value());

  const ExpectedSample& first = workload.samples.front();
  const uint64_t ms = recorder.clock.TicksPerSecond() / 1000;
  const uint64_t t0 = workload.samples.back().ticks + ms;
  const int32_t tid = first.tid;
  auto event = [&](SampleKind kind, uint64_t ticks, int context, uint64_t amount,
                   uint64_t object_ref) {
    static SampleRecord record;  // large (kMaxStackDepth frames): not on the stack
    record = SampleRecord{};
    record.ticks = ticks;
    record.tid = tid;
    record.kind = kind;
    record.engine = Engine::kRuntime;
    record.weight = 1;
    record.context = context < 0 ? ContextSnapshot{} : workload.contexts[context];
    record.event.amount = amount;
    record.event.object_bytes = 24;
    record.event.class_id = workload.class_names->Intern("[B");
    record.event.park_time = kNoParkTimeout;
    record.event.object_ref = object_ref;
    record.frame_count = 0;
    recorder.clock.Set(ticks);
    EXPECT_TRUE(IsOk(recorder.writer->Add(record)));
  };
  int context = -1;
  for (size_t c = 0; c < workload.contexts.size(); c++) {
    if (!workload.contexts[c].empty()) context = static_cast<int>(c);
  }
  ASSERT_GE(context, 0);
  event(SampleKind::kAllocation, t0, context, 524288, /*object_ref=*/1);
  event(SampleKind::kMonitorEnter, t0 + 10 * ms, context, 5 * ms, 0);
  event(SampleKind::kThreadPark, t0 + 20 * ms, -1, 2 * ms, 0);
  ASSERT_TRUE(IsOk(recorder.writer->Rotate()));
  event(SampleKind::kAllocation, t0 + 30 * ms, -1, 524288, /*object_ref=*/2);
  JfrReader reader;
  recorder.Close(&reader);  // reads the first chunk file
  EXPECT_EQ(tracker.released, 2);

  // Every chunk file of the repository alone: each runtime event's contextId is the id of the
  // ctxprof.Context event of its chunk that covers it (0 when none does).
  const std::vector<std::string> files = ListFolder(recorder.config.repository);
  ASSERT_EQ(files.size(), 2u);
  std::map<std::string, int> checked;
  for (const std::string& file : files) {
    JfrReader chunk;
    ASSERT_TRUE(IsOk(chunk.Read(file, {})));
    for (const JfrEvent& e : chunk.events()) {
      const std::string& type = e.type_name();
      if (type != "jdk.ObjectAllocationSample" && type != "jdk.JavaMonitorEnter" &&
          type != "jdk.ThreadPark" && type != "profiler.LiveObject") {
        continue;
      }
      ASSERT_FALSE(e.type->fields.empty());
      EXPECT_EQ(e.type->fields.back().name, "contextId") << type;
      const int64_t id = e.Field("contextId").integer();
      const int64_t os_tid = e.thread().Field("osThreadId").integer();
      std::vector<int64_t> times = {e.start_ticks()};
      if (!e.Field("duration").is_null()) {
        times.push_back(e.start_ticks() + e.Field("duration").integer());
      }
      for (int64_t ticks : times) {
        const JfrEvent* covering = chunk.ContextAt(os_tid, ticks);
        EXPECT_EQ(covering == nullptr ? 0 : covering->Field("contextId").integer(), id)
            << type << " in " << file << " at " << ticks;
      }
      if (type == "profiler.LiveObject") EXPECT_EQ(file, files.back());
      if (type == "profiler.LiveObject" && e.start_ticks() == static_cast<int64_t>(t0)) {
        const JfrEvent* covering = chunk.ContextAt(os_tid, e.start_ticks());
        ASSERT_NE(covering, nullptr) << "the live object's context is not in its chunk";
        for (const auto& [field, value] : workload.ContextFields(context)) {
          EXPECT_EQ(covering->Field(field).string(), value) << field;
        }
      }
      checked[type]++;
    }
  }
  EXPECT_EQ(checked, (std::map<std::string, int>{{"jdk.JavaMonitorEnter", 1},
                                                 {"jdk.ObjectAllocationSample", 2},
                                                 {"jdk.ThreadPark", 1},
                                                 {"profiler.LiveObject", 2}}));
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
