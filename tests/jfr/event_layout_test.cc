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
#include "tests/support/status_testing.h"

namespace ctxprof {
namespace {

struct LayoutRecorder {
  FakeClock clock;  // 2.4 GHz unless the constructor is given a rate
  FakeFrameResolver frames;
  FakeThreadResolver threads;
  Workload workload = MakeWorkload(2, 6, clock.Now() + 1000, clock.TicksPerSecond() / 1000, 3);
  JfrWriterConfig config;
  std::vector<FinishedChunk> finished;
  std::unique_ptr<JfrWriter> writer;

  explicit LayoutRecorder(const std::string& name, uint64_t ticks_per_second = 2400000000ULL)
      : clock(ticks_per_second) {
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
  // Opens the writer with a class-name dictionary for runtime events and `objects` (live).
  void OpenWithClassNames(ObjectTracker* objects) {
    std::string error;
    workload.class_names = Dictionary::Create(Dictionary::Options{}, &error);
    ASSERT_NE(workload.class_names, nullptr) << error;
    JfrWriterInputs inputs = workload.Inputs(&clock, &frames, &threads);
    inputs.class_names = workload.class_names.get();
    inputs.objects = objects;
    StatusOr<std::unique_ptr<JfrWriter>> opened = JfrWriter::Open(config, inputs);
    ASSERT_TRUE(IsOk(opened));
    writer = std::move(opened.value());
  }
  // Adds a record of the first workload thread, without frames, ending at `ticks`: with
  // `context` = workload.contexts[context] (-1: none); `amount` as in EventFields (bytes, or
  // ticks waited).
  void AddRecord(SampleKind kind, uint64_t ticks, int context, uint32_t weight, uint64_t amount,
                 uint64_t object_ref = 0) {
    static SampleRecord record;  // large (kMaxStackDepth frames): not on the stack
    record = SampleRecord{};
    record.ticks = ticks;
    record.tid = workload.samples.front().tid;
    record.kind = kind;
    record.engine = kind == SampleKind::kCpu    ? Engine::kPerfCpuClock
                    : kind == SampleKind::kWall ? Engine::kWall
                                                : Engine::kRuntime;
    record.state = kind == SampleKind::kWall ? ThreadState::kSleeping : ThreadState::kRunning;
    record.weight = weight;
    record.context = context < 0 ? ContextSnapshot{} : workload.contexts[context];
    record.event.amount = amount;
    record.event.object_bytes = 24;
    record.event.class_id = workload.class_names->Intern("[B");
    record.event.park_time = kNoParkTimeout;
    record.event.object_ref = object_ref;
    record.frame_count = 0;
    clock.Set(ticks);
    EXPECT_TRUE(IsOk(writer->Add(record)));
  }
  // The index of a workload context that is not empty.
  int SomeContext() const {
    for (size_t c = 0; c < workload.contexts.size(); c++) {
      if (!workload.contexts[c].empty()) return static_cast<int>(c);
    }
    return -1;
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
  // Adds every workload sample as one of `kind`, weight 1.
  void AddAll(SampleKind kind) {
    for (size_t i = 0; i < workload.samples.size(); i++) Add(i, kind, 1);
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

// ctxprof.Context's wire layout: the ids as longs (the W3C ids' bits), contextId only where the
// samples carry one to resolve through it.
TEST(EventLayoutTest, ContextEventsCarryBinaryIds) {
  for (bool context_id : {false, true}) {
    LayoutRecorder recorder(context_id ? "binary_ids_context_id.jfr" : "binary_ids.jfr");
    recorder.config.context_id = context_id;
    recorder.Open();
    recorder.AddAll(SampleKind::kWall);
    JfrReader reader;
    recorder.Close(&reader);
    int contexts = 0;
    for (const JfrEvent& event : reader.events()) {
      if (event.type_name() != "ctxprof.Context") continue;
      std::vector<std::string> fields;
      for (size_t f = 0; f < 7; f++) fields.push_back(event.type->fields[f].name);
      const std::vector<std::string> want =
          context_id
              ? std::vector<std::string>{"startTime",   "duration",   "eventThread", "contextId",
                                         "traceIdHigh", "traceIdLow", "spanId"}
              : std::vector<std::string>{"startTime",  "duration", "eventThread", "traceIdHigh",
                                         "traceIdLow", "spanId",   "http_route"};
      EXPECT_EQ(fields, want);
      for (const char* id : {"traceIdHigh", "traceIdLow", "spanId"}) {
        EXPECT_EQ(event.Field(id).kind(), JfrValue::Kind::kInteger) << id;
      }
      // The covering context of the thread's sample at this time is the one written.
      const int index = [&] {
        for (const ExpectedSample& sample : recorder.workload.samples) {
          if (sample.ticks == static_cast<uint64_t>(event.start_ticks())) return sample.context;
        }
        return -1;
      }();
      ASSERT_GE(index, 0);
      const ContextSnapshot& written = recorder.workload.contexts[index];
      EXPECT_EQ(static_cast<uint64_t>(event.Field("traceIdHigh").integer()), written.trace_id_high);
      EXPECT_EQ(static_cast<uint64_t>(event.Field("traceIdLow").integer()), written.trace_id_low);
      EXPECT_EQ(static_cast<uint64_t>(event.Field("spanId").integer()), written.span_id);
      contexts++;
    }
    EXPECT_GT(contexts, 0);
  }
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
  KeepAliveTracker tracker;
  recorder.OpenWithClassNames(&tracker);
  Workload& workload = recorder.workload;
  std::string error;
  const uint64_t ms = recorder.clock.TicksPerSecond() / 1000;
  const uint64_t t0 = workload.samples.back().ticks + ms;
  const int context = recorder.SomeContext();
  ASSERT_GE(context, 0);
  recorder.AddRecord(SampleKind::kAllocation, t0, context, 1, 524288, /*object_ref=*/1);
  recorder.AddRecord(SampleKind::kMonitorEnter, t0 + 10 * ms, context, 1, 5 * ms);
  recorder.AddRecord(SampleKind::kThreadPark, t0 + 20 * ms, -1, 1, 2 * ms);
  ASSERT_TRUE(IsOk(recorder.writer->Rotate()));
  recorder.AddRecord(SampleKind::kAllocation, t0 + 30 * ms, -1, 1, 524288, /*object_ref=*/2);
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
        EXPECT_EQ(workload.FieldsOf(*covering), workload.ContextFields(context));
      }
      checked[type]++;
    }
  }
  EXPECT_EQ(checked, (std::map<std::string, int>{{"jdk.JavaMonitorEnter", 1},
                                                 {"jdk.ObjectAllocationSample", 2},
                                                 {"jdk.ThreadPark", 1},
                                                 {"profiler.LiveObject", 2}}));
}

// upload= (JfrWriterConfig::pyroscope): the layout that Grafana's jfr-parser, the code
// Pyroscope's ingester runs, reads as the other readers do (docs/JFR.md, "Pyroscope"). Its rules,
// read from its source: a CPU, allocation, lock or park event weighs the `samples` of the last
// profiler.WallClockSample before it in the file; it reads a contextId on
// jdk.ObjectAllocationInNewTLAB (bytes: tlabSize) and not on jdk.ObjectAllocationSample; it takes
// a duration as nanoseconds whatever the chunk's ticksPerSecond.
TEST(EventLayoutTest, UploadLayoutIsWhatPyroscopesParserReads) {
  LayoutRecorder recorder("unused", kNanosPerSecond);
  recorder.config.path.clear();
  recorder.config.repository = FreshPath("pyroscope_layout");
  recorder.config.context_id = true;
  recorder.config.pyroscope = true;
  recorder.config.alloc_interval_bytes = 524288;
  recorder.config.lock_threshold_nanos = 0;
  recorder.OpenWithClassNames(nullptr);
  const uint64_t ms = kNanosPerMilli;
  const uint64_t t0 = recorder.workload.samples.back().ticks + ms;
  const int context = recorder.SomeContext();
  ASSERT_GE(context, 0);
  // Wall weights 5, 1 and 7 (an idle thread's batched samples), each followed by other kinds.
  recorder.AddRecord(SampleKind::kWall, t0, context, 5, 0);
  recorder.AddRecord(SampleKind::kCpu, t0 + 1 * ms, context, 1, 0);
  recorder.AddRecord(SampleKind::kAllocation, t0 + 2 * ms, context, 1, 524288);
  recorder.AddRecord(SampleKind::kWall, t0 + 3 * ms, -1, 1, 0);
  recorder.AddRecord(SampleKind::kMonitorEnter, t0 + 10 * ms, context, 1, 5 * ms);
  recorder.AddRecord(SampleKind::kWall, t0 + 11 * ms, context, 7, 0);
  recorder.AddRecord(SampleKind::kCpu, t0 + 12 * ms, context, 2, 0);
  recorder.AddRecord(SampleKind::kThreadPark, t0 + 20 * ms, -1, 1, 2 * ms);
  JfrReader reader;
  recorder.Close(&reader);

  ASSERT_EQ(reader.chunks().size(), 1u);
  EXPECT_EQ(reader.chunks()[0].ticks_per_second, kNanosPerSecond);
  // The parser's weight of each event, replayed in file order.
  int64_t carried = 1;
  int64_t wall_samples = 0;
  std::map<std::string, int> weighed;
  for (const JfrEvent& event : reader.events()) {
    const std::string& type = event.type_name();
    if (type == "profiler.WallClockSample") {
      carried = event.Field("samples").integer();
      wall_samples += carried;
      weighed[type]++;
    } else if (type == "jdk.ExecutionSample" || type == "jdk.ObjectAllocationInNewTLAB" ||
               type == "jdk.JavaMonitorEnter" || type == "jdk.ThreadPark") {
      EXPECT_EQ(carried, 1) << type << " at " << event.start_ticks();
      weighed[type]++;
    }
    if (type == "jdk.ObjectAllocationInNewTLAB") {
      EXPECT_EQ(event.Field("tlabSize").integer(), 524288);
      EXPECT_EQ(event.Field("allocationSize").integer(), 24);
      EXPECT_EQ(event.type->fields.back().name, "contextId");
      const JfrEvent* covering =
          reader.ContextAt(JfrReader::ThreadKey(event.thread()), event.start_ticks());
      ASSERT_NE(covering, nullptr);
      EXPECT_EQ(event.Field("contextId").integer(), covering->Field("contextId").integer());
      EXPECT_NE(event.Field("contextId").integer(), 0);
    }
    if (type == "jdk.JavaMonitorEnter") {
      EXPECT_EQ(event.Field("duration").integer(), static_cast<int64_t>(5 * ms));
      EXPECT_EQ(reader.NanosOf(event.Field("duration").integer()), 5000000);
    }
  }
  EXPECT_EQ(wall_samples, 13);  // the weights are kept, split as 4 + 1, 1, 6 + 1
  EXPECT_EQ(weighed, (std::map<std::string, int>{{"jdk.ExecutionSample", 3},
                                                 {"jdk.JavaMonitorEnter", 1},
                                                 {"jdk.ObjectAllocationInNewTLAB", 1},
                                                 {"jdk.ThreadPark", 1},
                                                 {"profiler.WallClockSample", 5}}));
  EXPECT_EQ(ActiveSettings(reader).at("alloc"), "524288");
}

// The upload layout with a clock that does not count nanoseconds is refused: Pyroscope would
// read every lock and park duration wrong.
TEST(EventLayoutTest, UploadLayoutNeedsANanosecondClock) {
  LayoutRecorder recorder("tsc_upload.jfr");
  recorder.config.context_id = true;
  recorder.config.pyroscope = true;
  const StatusOr<std::unique_ptr<JfrWriter>> opened = JfrWriter::Open(
      recorder.config,
      recorder.workload.Inputs(&recorder.clock, &recorder.frames, &recorder.threads));
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(opened.status().message().find("clock=monotonic"), std::string::npos)
      << opened.status().message();
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

// jfrsync=: a Java thread's key is the JDK recorder's (JDK 25's printer joins contexts by it);
// threads without one keep their tid, and a key already taken gives the later thread a spare.
TEST(EventLayoutTest, ThreadKeysOfTheJdksRecorder) {
  struct JdkKeyResolver : ThreadResolver {
    void Resolve(int32_t tid, ResolvedThread* out) override {
      out->name = "t" + std::to_string(tid);
      if (tid == 3001) out->jdk_key = 23;
      if (tid == 3002) out->jdk_key = 40;  // also a native thread's tid below
    }
  } resolver;
  ThreadPool pool(&resolver);
  uint64_t pending = 0;
  EXPECT_EQ(pool.Key(3001, 0, 1, &pending), 23u);
  EXPECT_EQ(pool.Key(40, 0, 1, &pending), 40u);  // a native thread: its tid
  EXPECT_GE(pool.Key(3002, 0, 1, &pending), ThreadPool::kFirstSpareKey);  // 40 is taken
  EXPECT_EQ(pool.Key(3001, 0, 2, &pending), 23u);  // the same identity in the next chunk
}

TEST(EventLayoutTest, FinishedChunksCarryTheirContexts) {
  LayoutRecorder recorder("unused");
  recorder.config.path.clear();
  recorder.config.repository = FreshPath("finished_repository");
  recorder.config.context_id = true;
  recorder.Open();
  recorder.AddAll(SampleKind::kCpu);
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
    if (!event.TraceId().empty()) want["trace_id"] = event.TraceId();
    if (!event.SpanId().empty()) want["span_id"] = event.SpanId();
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
