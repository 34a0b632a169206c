// Round trips of synthetic samples through JfrWriter and JfrReader, the writer's chunk and
// context guarantees, and the reader's behaviour on truncated and corrupt input.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <set>

#include "ctxprof_version.h"
#include "profiler/jfr/jfr_buffer.h"
#include "profiler/jfr/jfr_reader.h"
#include "profiler/jfr_events/jfr_writer.h"
#include "tests/jfr/synthetic.h"
#include "tests/support/status_testing.h"

namespace ctxprof {
namespace {

std::string TempPath(const std::string& name) {
  const char* dir = getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

std::vector<uint8_t> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

struct Recorder {
  FakeClock clock;
  FakeFrameResolver frames;
  FakeThreadResolver threads;
  Workload workload;
  JfrWriterConfig config;
  std::unique_ptr<JfrWriter> writer;

  Recorder(int threads_count, int samples_per_thread)
      : workload(MakeWorkload(threads_count, samples_per_thread,
                              clock.Now() + clock.TicksPerSecond() / 1000,
                              clock.TicksPerSecond() / 1000, 7)) {
    config.engine = "perf_cpu_clock";
    config.interval_nanos = 1000000;
    // Longer than 127 bytes: the settings event needs a multi-byte record size.
    config.fallbacks = std::string(150, 'x') + " -> ctimer (perf_event_open: EACCES)";
  }
  JfrWriterInputs Inputs() {
    JfrWriterInputs inputs;
    inputs.clock = &clock;
    inputs.frames = &frames;
    inputs.threads = &threads;
    inputs.dictionary = workload.dictionary.get();
    inputs.attributes = workload.attributes.get();
    inputs.dropped_samples = [] { return uint64_t{3}; };
    return inputs;
  }
  // Opens the writer; `thread_names` replaces the fake thread resolver when given.
  void Open(ThreadResolver* thread_names = nullptr) {
    JfrWriterInputs inputs = Inputs();
    if (thread_names != nullptr) inputs.threads = thread_names;
    StatusOr<std::unique_ptr<JfrWriter>> opened = JfrWriter::Open(config, inputs);
    ASSERT_TRUE(IsOk(opened));
    writer = std::move(opened.value());
  }
  void Add(size_t begin, size_t end) {
    static SampleRecord sample;
    for (size_t i = begin; i < end; i++) {
      workload.Fill(i, &sample);
      clock.Set(sample.ticks);
      ASSERT_TRUE(IsOk(writer->Add(sample)));
    }
  }
  void WriteAll() {
    Open();
    Add(0, workload.samples.size());
    clock.Advance(clock.TicksPerSecond() / 1000);
    ASSERT_TRUE(IsOk(writer->Close()));
  }
};

struct Interval {
  int64_t start_ticks;
  int64_t end_ticks;
  const JfrEvent* event;
  int samples = 0;
};

// Checks every sample of `recorder` against what `reader` found.
void ExpectSamplesMatch(const Recorder& recorder, const JfrReader& reader, size_t sample_count) {
  const Workload& workload = recorder.workload;
  const bool jdk_mode = recorder.config.cpu_samples == CpuSampleEvent::kJdk;
  std::map<std::pair<int64_t, int64_t>, const JfrEvent*> samples;  // (tid, ticks) -> event
  std::map<int64_t, std::vector<Interval>> intervals;              // tid -> intervals
  for (const JfrEvent& event : reader.events()) {
    const std::string& type = event.type_name();
    if (type == "jdk.ExecutionSample" || type == "ctxprof.CpuSample" ||
        type == "profiler.WallClockSample") {
      const JfrValue& thread =
          event.Field(type == "jdk.ExecutionSample" ? "sampledThread" : "eventThread");
      const auto key = std::make_pair(thread.Field("osThreadId").integer(), event.start_ticks());
      EXPECT_TRUE(samples.emplace(key, &event).second) << "two samples at one time";
    } else if (type == "ctxprof.Context") {
      const int64_t start = event.start_ticks();
      intervals[event.Field("eventThread").Field("osThreadId").integer()].push_back(
          Interval{start, start + event.Field("duration").integer(), &event});
    }
  }
  ASSERT_EQ(samples.size(), sample_count);
  for (auto& [tid, list] : intervals) {
    std::sort(list.begin(), list.end(),
              [](const Interval& a, const Interval& b) { return a.start_ticks < b.start_ticks; });
    for (size_t i = 1; i < list.size(); i++) {
      ASSERT_LE(list[i - 1].end_ticks, list[i].start_ticks) << "overlap on thread " << tid;
      ASSERT_LE(reader.EpochNanosOf(list[i - 1].end_ticks),
                reader.EpochNanosOf(list[i].start_ticks));
    }
  }

  for (size_t i = 0; i < sample_count; i++) {
    const ExpectedSample& want = workload.samples[i];
    const auto it = samples.find({want.tid, static_cast<int64_t>(want.ticks)});
    ASSERT_NE(it, samples.end()) << "sample " << i << " missing";
    const JfrEvent& event = *it->second;
    const bool wall = want.kind == SampleKind::kWall;
    EXPECT_EQ(event.type_name(), wall       ? "profiler.WallClockSample"
                                 : jdk_mode ? "jdk.ExecutionSample"
                                            : "ctxprof.CpuSample");
    const JfrValue& thread = event.Field(jdk_mode && !wall ? "sampledThread" : "eventThread");
    EXPECT_EQ(thread.Field("osName").string(), FakeThreadResolver::NameOf(want.tid));
    EXPECT_EQ(thread.Field("javaThreadId").integer(), FakeThreadResolver::JavaIdOf(want.tid));
    EXPECT_EQ(thread.Field("javaName").is_null(), FakeThreadResolver::JavaIdOf(want.tid) == 0);
    EXPECT_EQ(event.Field("state").string(), wall ? "STATE_SLEEPING" : "STATE_DEFAULT");
    if (wall) {
      EXPECT_EQ(event.Field("samples").integer(), 1);
      EXPECT_EQ(event.Field("timeSpan").integer(), 0);
    } else if (!jdk_mode) {
      EXPECT_EQ(event.Field("weight").integer(), 1);
    }

    const std::vector<RawFrame>& stack = workload.stacks[want.stack];
    EXPECT_EQ(event.Field("stackTrace").Field("truncated").integer(),
              workload.stack_truncated[want.stack] ? 1 : 0);
    const std::vector<JfrFrame> frames = JfrReader::FramesOf(event.Field("stackTrace"));
    ASSERT_EQ(frames.size(), stack.size()) << "sample " << i;
    for (size_t f = 0; f < stack.size(); f++) {
      ResolvedFrame resolved;
      FakeFrameResolver().Resolve(stack[f], &resolved);
      EXPECT_EQ(frames[f].class_name, resolved.class_name);
      EXPECT_EQ(frames[f].method_name, resolved.method_name);
      EXPECT_EQ(frames[f].descriptor, resolved.descriptor);
      // Native frames: line and bytecode index 0 (StackPool).
      const bool native = resolved.type == JfrFrameType::kNative;
      EXPECT_EQ(frames[f].line_number, native ? 0 : resolved.line_number);
      EXPECT_EQ(frames[f].bytecode_index, native ? 0 : stack[f].bci);
      EXPECT_EQ(frames[f].type, JfrFrameTypeName(resolved.type));
    }

    // Join by thread and time, the way a JDK 17 user must, in ticks and in JDK nanoseconds.
    const int64_t ticks = static_cast<int64_t>(want.ticks);
    const int64_t nanos = reader.EpochNanosOf(ticks);
    std::vector<Interval*> covering;
    for (Interval& interval : intervals[want.tid]) {
      const bool in_ticks = interval.start_ticks <= ticks && ticks < interval.end_ticks;
      const bool in_nanos = reader.EpochNanosOf(interval.start_ticks) <= nanos &&
                            nanos < reader.EpochNanosOf(interval.start_ticks) +
                                        reader.NanosOf(interval.end_ticks - interval.start_ticks);
      EXPECT_EQ(in_ticks, in_nanos) << "sample " << i << ": tick and time joins disagree";
      if (in_ticks) covering.push_back(&interval);
    }
    const JfrEvent* joined = reader.ContextAt(want.tid, ticks);
    if (want.context < 0) {
      EXPECT_TRUE(covering.empty()) << "sample " << i << " has no context but is covered";
      EXPECT_EQ(joined, nullptr) << "sample " << i;
      continue;
    }
    ASSERT_EQ(covering.size(), 1u) << "sample " << i;
    EXPECT_EQ(joined, covering[0]->event) << "JfrReader::ContextAt, sample " << i;
    covering[0]->samples++;
    EXPECT_EQ(workload.FieldsOf(*covering[0]->event), workload.ContextFields(want.context))
        << "sample " << i;
  }
  for (const auto& [tid, list] : intervals) {
    for (const Interval& interval : list) EXPECT_GT(interval.samples, 0) << "empty interval";
  }
}

TEST(JfrBufferTest, VarintsMatchTheFormatNote) {
  const std::vector<std::pair<uint64_t, std::vector<uint8_t>>> cases = {
      {0, {0x00}},
      {127, {0x7F}},
      {128, {0x80, 0x01}},
      {4242, {0x92, 0x21}},
      {50000000, {0x80, 0xE1, 0xEB, 0x17}},
      {0x7F0000001000ULL, {0x80, 0xA0, 0x80, 0x80, 0x80, 0xE0, 0x1F}},
      {static_cast<uint64_t>(-260), {0xFC, 0xFD, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}},
      {0x8000000000000000ULL, {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80}},
  };
  for (const auto& [value, bytes] : cases) {
    JfrBuffer buffer;
    buffer.PutVarint(value);
    EXPECT_EQ(std::vector<uint8_t>(buffer.data(), buffer.data() + buffer.size()), bytes) << value;
    EXPECT_EQ(JfrBuffer::VarintLength(value), bytes.size());
  }
  JfrBuffer padded;
  const size_t at = padded.ReservePaddedVarint();
  padded.PatchVarint(at, 3493);
  EXPECT_EQ(std::vector<uint8_t>(padded.data(), padded.data() + padded.size()),
            (std::vector<uint8_t>{0xA5, 0x9B, 0x80, 0x80, 0x00}));
}

class RoundTripTest : public ::testing::TestWithParam<std::tuple<CpuSampleEvent, uint64_t>> {};

TEST_P(RoundTripTest, EverySampleStackAndContextComesBack) {
  Recorder recorder(12, 100);
  recorder.config.cpu_samples = std::get<0>(GetParam());
  recorder.config.chunk_size_bytes = std::get<1>(GetParam());
  // With several chunks, also drop unused stacks at every rotation.
  if (recorder.config.chunk_size_bytes != 0) recorder.config.stack_cache_bytes = 1;
  recorder.config.path = TempPath("roundtrip.jfr");
  ASSERT_NO_FATAL_FAILURE(recorder.WriteAll());

  JfrReader reader;
  ASSERT_TRUE(IsOk(reader.Read(recorder.config.path, {})));
  EXPECT_EQ(reader.unknown_records(), 0u);
  ExpectSamplesMatch(recorder, reader, recorder.workload.samples.size());

  // Chunks: finished, final flag only on the last, distinct increasing start times, one clock.
  const std::vector<JfrChunkInfo>& chunks = reader.chunks();
  ASSERT_EQ(chunks.size(), recorder.writer->chunks_finished());
  if (recorder.config.chunk_size_bytes != 0) {
    EXPECT_GT(chunks.size(), 2u);
    // The limit bounds whole chunks (events and pools) up to the record that crossed it.
    for (const JfrChunkInfo& chunk : chunks)
      EXPECT_LT(chunk.size, 2 * recorder.config.chunk_size_bytes);
  }
  for (size_t c = 0; c < chunks.size(); c++) {
    EXPECT_EQ(chunks[c].generation, 0);
    EXPECT_EQ(chunks[c].flags, c + 1 == chunks.size() ? 3 : 1);
    EXPECT_EQ(chunks[c].ticks_per_second, 2400000000ULL);
    if (c > 0) {
      EXPECT_GT(chunks[c].start_nanos, chunks[c - 1].start_nanos);
      EXPECT_EQ(chunks[c].start_nanos, recorder.clock.EpochNanosAt(chunks[c].start_ticks));
    }
  }

  // jdk.ExecutionSample keeps exactly the JDK's fields (tools such as async-profiler's
  // converter read them by position).
  for (const JfrEvent& event : reader.events()) {
    if (event.type_name() != "jdk.ExecutionSample") continue;
    std::vector<std::string> names;
    for (const JfrField& field : event.type->fields) names.push_back(field.name);
    EXPECT_EQ(names,
              (std::vector<std::string>{"startTime", "sampledThread", "stackTrace", "state"}));
    break;
  }

  // ctxprof.Context: the context fields, and only they, are @Contextual.
  for (const JfrEvent& event : reader.events()) {
    if (event.type_name() != "ctxprof.Context") continue;
    std::vector<std::string> contextual;
    for (const JfrField& field : event.type->fields) {
      if (field.contextual) contextual.push_back(field.name);
    }
    EXPECT_EQ(contextual, (std::vector<std::string>{"traceIdHigh", "traceIdLow", "spanId",
                                                    "http_route", "tenant_id", "region"}));
    break;
  }

  // Self-description: settings at every chunk start, counters at every chunk end.
  int settings = 0;
  const JfrEvent* last_counters = nullptr;
  for (const JfrEvent& event : reader.events()) {
    if (event.type_name() == "ctxprof.ProfilerSettings") {
      settings++;
      EXPECT_EQ(event.Field("engine").string(), "perf_cpu_clock");
      EXPECT_EQ(event.Field("interval").integer(), 1000000);
      EXPECT_EQ(event.Field("clock").string(), "fake-tsc");
      EXPECT_EQ(event.Field("ticksPerSecond").integer(), 2400000000LL);
      EXPECT_EQ(event.Field("attributes").string(), "http.route,tenant-id,region");
      EXPECT_EQ(event.Field("version").string(), kCtxprofVersion);
      EXPECT_EQ(event.Field("fallbacks").string(), recorder.config.fallbacks);
    } else if (event.type_name() == "ctxprof.ProfilerCounters") {
      last_counters = &event;
    }
  }
  EXPECT_EQ(settings, static_cast<int>(chunks.size()));
  ASSERT_NE(last_counters, nullptr);
  int64_t truncated = 0, wall = 0;
  for (const ExpectedSample& s : recorder.workload.samples) {
    truncated += recorder.workload.stack_truncated[s.stack] ? 1 : 0;
    wall += s.kind == SampleKind::kWall ? 1 : 0;
  }
  EXPECT_EQ(last_counters->Field("samples").integer(), 1200);
  EXPECT_EQ(last_counters->Field("wallSamples").integer(), wall);
  EXPECT_EQ(last_counters->Field("cpuSamples").integer(), 1200 - wall);
  EXPECT_EQ(last_counters->Field("droppedSamples").integer(), 3);
  EXPECT_EQ(last_counters->Field("truncatedStacks").integer(), truncated);
}

INSTANTIATE_TEST_SUITE_P(Modes, RoundTripTest,
                         ::testing::Values(std::make_tuple(CpuSampleEvent::kJdk, uint64_t{0}),
                                           std::make_tuple(CpuSampleEvent::kCtxprof, uint64_t{0}),
                                           std::make_tuple(CpuSampleEvent::kJdk, uint64_t{20000}),
                                           std::make_tuple(CpuSampleEvent::kCtxprof,
                                                           uint64_t{20000})));

// Runtime events: the JDK's layouts, class names, wait start = end - amount, and context
// intervals that cover each wait from its start to its end, even when a sample of the same
// context inside the wait reached the writer first and the context changed just before.
TEST(JfrWriterTest, RuntimeEventsKeepTheJdkLayoutsAndJoinTheirContextByStartAndEnd) {
  FakeClock clock;
  const uint64_t ms = clock.TicksPerSecond() / 1000;
  const uint64_t t0 = clock.Now() + ms;
  Workload workload;
  std::string error;
  workload.dictionary = Dictionary::Create(Dictionary::Options{}, &error);
  workload.class_names = Dictionary::Create(Dictionary::Options{}, &error);
  ASSERT_TRUE(workload.attributes->Register({"endpoint"}, &error)) << error;
  workload.stacks = {{RawFrame{42, 3, FrameKind::kJavaJit}}};
  workload.stack_truncated = {false};
  for (const char* endpoint : {"/a", "/b"}) {
    ContextSnapshot context{};
    context.trace_id_low = 1;
    context.attributes[0] = workload.dictionary->Intern(endpoint);
    workload.contexts.push_back(context);
  }
  auto event = [&](const char* class_name, uint64_t amount) {
    EventFields fields{};
    fields.class_id = workload.class_names->Intern(class_name);
    fields.amount = amount;
    fields.park_time = kNoParkTimeout;
    return fields;
  };
  EventFields timed_park = event("java/util/concurrent/locks/ReentrantLock$NonfairSync", 3 * ms);
  timed_park.park_time = 5000000;
  EventFields deadline_park = event("java/lang/Object", ms);
  deadline_park.park_time = 1795300000123;
  deadline_park.park_absolute = true;
  workload.samples = {
      {SampleKind::kCpu, 7, t0, 0, 0, {}},                // /a
      {SampleKind::kWall, 7, t0 + 12 * ms, 0, 1, {}},     // /b, inside the wait below
      {SampleKind::kMonitorEnter, 7, t0 + 15 * ms, 0, 1,  // /b: waited from t0 + 5 ms
       event("java/lang/Object", 10 * ms)},
      {SampleKind::kAllocation, 7, t0 + 16 * ms, 0, 1, event("[B", 524288)},
      {SampleKind::kThreadPark, 7, t0 + 20 * ms, 0, -1, timed_park},
      {SampleKind::kThreadPark, 7, t0 + 22 * ms, 0, -1, deadline_park},
  };
  JfrWriterConfig config;
  config.path = TempPath("events.jfr");
  config.engine = "perf_cpu_clock";
  config.alloc_interval_bytes = 524288;
  config.lock_threshold_nanos = 1000000;
  ASSERT_TRUE(IsOk(WriteWorkload(workload, &clock, ms, config, nullptr)));

  JfrReader reader;
  ASSERT_TRUE(IsOk(reader.Read(config.path, {})));
  std::map<std::string, std::vector<const JfrEvent*>> by_type;
  for (const JfrEvent& event : reader.events()) by_type[event.type_name()].push_back(&event);
  auto field_names = [](const JfrEvent* event) {
    std::vector<std::string> names;
    for (const JfrField& field : event->type->fields) names.push_back(field.name);
    return names;
  };
  auto endpoint_at = [&reader](int64_t ticks) -> std::string {
    const JfrEvent* context = reader.ContextAt(7, ticks);
    return context == nullptr ? "-" : context->Field("endpoint").string();
  };

  ASSERT_EQ(by_type["jdk.ObjectAllocationSample"].size(), 1u);
  const JfrEvent* allocation = by_type["jdk.ObjectAllocationSample"][0];
  EXPECT_EQ(field_names(allocation),
            (std::vector<std::string>{"startTime", "eventThread", "stackTrace", "objectClass",
                                      "weight"}));
  EXPECT_EQ(allocation->start_ticks(), static_cast<int64_t>(t0 + 16 * ms));
  EXPECT_EQ(allocation->Field("objectClass").Field("name").string(), "[B");
  EXPECT_EQ(allocation->Field("weight").integer(), 524288);
  EXPECT_EQ(endpoint_at(allocation->start_ticks()), "/b");

  ASSERT_EQ(by_type["jdk.JavaMonitorEnter"].size(), 1u);
  const JfrEvent* monitor = by_type["jdk.JavaMonitorEnter"][0];
  EXPECT_EQ(field_names(monitor),
            (std::vector<std::string>{"startTime", "duration", "eventThread", "stackTrace",
                                      "monitorClass", "previousOwner", "address"}));
  EXPECT_EQ(monitor->start_ticks(), static_cast<int64_t>(t0 + 5 * ms));
  EXPECT_EQ(monitor->Field("duration").integer(), static_cast<int64_t>(10 * ms));
  EXPECT_EQ(monitor->Field("monitorClass").Field("name").string(), "java/lang/Object");
  EXPECT_TRUE(monitor->Field("previousOwner").is_null());
  // The wait joins /b by its start (before the wall sample that opened /b's run) and its end;
  // /a's interval ends before the wait began.
  EXPECT_EQ(endpoint_at(t0 + 5 * ms), "/b");
  EXPECT_EQ(endpoint_at(t0 + 15 * ms), "/b");
  EXPECT_EQ(endpoint_at(t0), "/a");
  EXPECT_EQ(endpoint_at(t0 + 5 * ms - 1), "-");

  ASSERT_EQ(by_type["jdk.ThreadPark"].size(), 2u);
  const JfrEvent* timed = by_type["jdk.ThreadPark"][0];
  const JfrEvent* deadline = by_type["jdk.ThreadPark"][1];
  EXPECT_EQ(field_names(timed),
            (std::vector<std::string>{"startTime", "duration", "eventThread", "stackTrace",
                                      "parkedClass", "timeout", "until", "address"}));
  EXPECT_EQ(timed->Field("parkedClass").Field("name").string(),
            "java/util/concurrent/locks/ReentrantLock$NonfairSync");
  EXPECT_EQ(timed->Field("timeout").integer(), 5000000);
  EXPECT_EQ(timed->Field("until").integer(), INT64_MIN);
  EXPECT_EQ(deadline->Field("timeout").integer(), INT64_MIN);
  EXPECT_EQ(deadline->Field("until").integer(), 1795300000123);
  EXPECT_EQ(endpoint_at(timed->start_ticks()), "-");

  ASSERT_EQ(by_type["ctxprof.ProfilerCounters"].size(), 1u);
  const JfrEvent* counters = by_type["ctxprof.ProfilerCounters"][0];
  EXPECT_EQ(counters->Field("samples").integer(), 2);
  EXPECT_EQ(counters->Field("allocationSamples").integer(), 1);
  EXPECT_EQ(counters->Field("monitorEnters").integer(), 1);
  EXPECT_EQ(counters->Field("threadParks").integer(), 2);
  const JfrEvent* settings = by_type["ctxprof.ProfilerSettings"][0];
  EXPECT_EQ(settings->Field("allocInterval").integer(), 524288);
  EXPECT_EQ(settings->Field("lockThreshold").integer(), 1000000);
  EXPECT_EQ(settings->Field("select").string(), "all");
}

TEST(JfrWriterTest, RecordingFileHasMode0600) {
  Recorder recorder(1, 3);
  recorder.config.path = TempPath("mode.jfr");
  ASSERT_NO_FATAL_FAILURE(recorder.WriteAll());
  struct stat st;
  ASSERT_EQ(stat(recorder.config.path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(JfrWriterTest, MissingFolderIsAnErrorNamingThePath) {
  Recorder recorder(1, 1);
  recorder.config.path = TempPath("no/such/folder/x.jfr");
  const StatusOr<std::unique_ptr<JfrWriter>> opened =
      JfrWriter::Open(recorder.config, recorder.Inputs());
  ASSERT_FALSE(opened.ok());
  const std::string& error = opened.status().message();
  EXPECT_NE(error.find(recorder.config.path), std::string::npos) << error;
  EXPECT_NE(error.find("No such file or directory"), std::string::npos) << error;
  EXPECT_EQ(opened.status().code(), StatusCode::kIo);
  EXPECT_EQ(opened.status().os_error(), ENOENT);
}

TEST(JfrWriterTest, PathAndRepositoryAreExclusive) {
  Recorder recorder(1, 1);
  const StatusOr<std::unique_ptr<JfrWriter>> opened =
      JfrWriter::Open(recorder.config, recorder.Inputs());
  ASSERT_FALSE(opened.ok());
  const std::string& error = opened.status().message();
  EXPECT_NE(error.find("exactly one of path"), std::string::npos) << error;
  EXPECT_EQ(opened.status().code(), StatusCode::kInvalidArgument);
}

// Pool keys denote one value for the whole file (readers cache entries across chunks by key):
// a thread renamed between chunks, or a reused tid, gets a new key, not a changed entry.
TEST(JfrWriterTest, RenamedThreadGetsANewKeyInTheNextChunk) {
  struct RenamingResolver : ThreadResolver {
    std::string name = "before";
    void Resolve(int32_t, ResolvedThread* out) override { out->name = name; }
  } renaming;
  Recorder recorder(1, 4);
  recorder.config.path = TempPath("rename.jfr");
  ASSERT_NO_FATAL_FAILURE(recorder.Open(&renaming));
  JfrWriter* writer = recorder.writer.get();
  static SampleRecord sample;
  for (size_t i = 0; i < 4; i++) {
    if (i == 2) {
      renaming.name = "after";
      ASSERT_TRUE(IsOk(writer->Rotate()));
    }
    recorder.workload.Fill(i, &sample);
    recorder.clock.Set(sample.ticks);
    ASSERT_TRUE(IsOk(writer->Add(sample)));
  }
  ASSERT_TRUE(IsOk(writer->Close()));

  JfrReader reader;
  ASSERT_TRUE(IsOk(reader.Read(recorder.config.path, {})));
  std::vector<std::pair<uint32_t, std::string>> names;  // (chunk, thread name) per sample
  int events_after = 0;                                 // events of any type on "after"
  for (const JfrEvent& event : reader.events()) {
    const JfrValue& thread = event.type_name() == "jdk.ExecutionSample"
                                 ? event.Field("sampledThread")
                                 : event.Field("eventThread");
    if (event.type_name() == "jdk.ExecutionSample" ||
        event.type_name() == "profiler.WallClockSample") {
      names.emplace_back(event.chunk, thread.Field("osName").string());
    }
    events_after += thread.Field("osName").string() == "after" ? 1 : 0;
  }
  EXPECT_EQ(names, (std::vector<std::pair<uint32_t, std::string>>{
                       {0, "before"}, {0, "before"}, {1, "after"}, {1, "after"}}));

  // JfrReader resolves pools per chunk; the JDK would show a reused key's first value.
  const std::string command =
      "timeout 60 /usr/lib/jvm/java-17-openjdk-amd64/bin/jfr print --json '" +
      recorder.config.path + "' | grep -c '\"osName\": \"after\"'";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  char line[32] = {};
  ASSERT_NE(fgets(line, sizeof(line), pipe), nullptr);
  pclose(pipe);
  EXPECT_EQ(atoi(line), events_after) << "JDK 17 jfr shows a stale thread name";
}

// A carrier thread's samples belong to the virtual thread it runs: an entry like JDK 25's
// (osThreadId 0, the virtual thread's name and id, virtual=true), and the context join follows
// the virtual thread, not the carrier.
TEST(JfrWriterTest, VirtualThreadSamplesBelongToTheVirtualThread) {
  struct NamingResolver : FakeThreadResolver {
    std::string VirtualThreadName(uint64_t id) override { return id == 7 ? "vt-seven" : ""; }
  } naming;
  Recorder recorder(1, 6);
  recorder.config.path = TempPath("virtual.jfr");
  ASSERT_NO_FATAL_FAILURE(recorder.Open(&naming));
  JfrWriter* writer = recorder.writer.get();
  // One carrier: its own work, then virtual threads 7 and 8 in turns, each under the context
  // the workload gives sample i.
  const uint64_t runs[] = {0, 7, 7, 8, 7, 8};
  static SampleRecord sample;
  for (size_t i = 0; i < 6; i++) {
    recorder.workload.Fill(i, &sample);
    sample.virtual_thread_id = runs[i];
    recorder.clock.Set(sample.ticks);
    ASSERT_TRUE(IsOk(writer->Add(sample)));
  }
  recorder.clock.Advance(recorder.clock.TicksPerSecond() / 1000);
  ASSERT_TRUE(IsOk(writer->Close()));

  JfrReader reader;
  ASSERT_TRUE(IsOk(reader.Read(recorder.config.path, {})));
  size_t index = 0;
  for (const JfrEvent& event : reader.events()) {
    if (event.type_name() != "jdk.ExecutionSample" &&
        event.type_name() != "profiler.WallClockSample") {
      continue;
    }
    const JfrValue& thread = event.thread();
    const uint64_t id = runs[index];
    const int32_t tid = recorder.workload.samples[index].tid;
    EXPECT_EQ(thread.Field("virtual").integer(), id != 0 ? 1 : 0) << index;
    EXPECT_EQ(thread.Field("osThreadId").integer(), id != 0 ? 0 : tid) << index;
    EXPECT_EQ(thread.Field("javaThreadId").integer(),
              id != 0 ? static_cast<int64_t>(id) : FakeThreadResolver::JavaIdOf(tid))
        << index;
    EXPECT_EQ(thread.Field("osName").is_null(), id != 0) << index;
    if (id != 0) {
      EXPECT_EQ(thread.Field("javaName").string(), id == 7 ? "vt-seven" : "") << index;
    }
    const JfrEvent* context = reader.ContextAt(JfrReader::ThreadKey(thread), event.start_ticks());
    const int want = recorder.workload.samples[index].context;
    ASSERT_EQ(context != nullptr, want >= 0) << index;
    if (context != nullptr) {
      EXPECT_EQ(JfrReader::ThreadKey(context->thread()), JfrReader::ThreadKey(thread)) << index;
      const std::map<std::string, std::string> fields = recorder.workload.ContextFields(want);
      EXPECT_EQ(context->TraceId(), fields.count("traceId") != 0 ? fields.at("traceId") : "")
          << index;
    }
    index++;
  }
  EXPECT_EQ(index, 6u);
}

// Bounded memory: at a rotation over stack_cache_bytes, stacks the finished chunk did not use
// are dropped; one that comes back gets a new key and resolves correctly in every reader.
TEST(JfrWriterTest, DroppedStackComesBackUnderANewKey) {
  Recorder recorder(1, 1);
  recorder.config.path = TempPath("dropped.jfr");
  recorder.config.stack_cache_bytes = 1;
  ASSERT_NO_FATAL_FAILURE(recorder.Open());
  const std::vector<RawFrame>& a = recorder.workload.stacks[41];  // 250 frames
  const std::vector<RawFrame>& b = recorder.workload.stacks[0];
  static SampleRecord sample;
  recorder.workload.Fill(0, &sample);
  sample.kind = SampleKind::kCpu;
  // Chunks: A | B | A. Starting chunk 3, A was not used by chunk 2 and is gone.
  const std::vector<const std::vector<RawFrame>*> order = {&a, &b, &a};
  for (size_t c = 0; c < order.size(); c++) {
    if (c > 0) {
      ASSERT_TRUE(IsOk(recorder.writer->Rotate()));
    }
    if (c == 2) {
      EXPECT_EQ(recorder.writer->cached_stack_frames(), b.size());
    }
    sample.frame_count = static_cast<uint32_t>(order[c]->size());
    std::copy(order[c]->begin(), order[c]->end(), sample.frames);
    sample.flags = 0;
    sample.ticks += recorder.clock.TicksPerSecond() / 100;
    recorder.clock.Set(sample.ticks);
    ASSERT_TRUE(IsOk(recorder.writer->Add(sample)));
  }
  ASSERT_TRUE(IsOk(recorder.writer->Close()));

  JfrReader reader;
  ASSERT_TRUE(IsOk(reader.Read(recorder.config.path, {})));
  std::vector<size_t> depths;
  for (const JfrEvent& event : reader.events()) {
    if (event.type_name() == "jdk.ExecutionSample") {
      depths.push_back(JfrReader::FramesOf(event.Field("stackTrace")).size());
    }
  }
  EXPECT_EQ(depths, (std::vector<size_t>{a.size(), b.size(), a.size()}));

  // The JDK caches pool entries across chunks by key: with a reused key it would show B's
  // frames (or none) for the third sample.
  const std::string command =
      "timeout 60 /usr/lib/jvm/java-17-openjdk-amd64/bin/jfr print "
      "--events jdk.ExecutionSample --stack-depth 300 '" +
      recorder.config.path + "' | grep -c '^    com\\.'";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  char line[32] = {};
  ASSERT_NE(fgets(line, sizeof(line), pipe), nullptr);
  pclose(pipe);
  size_t java_frames = 0;
  for (const std::vector<RawFrame>* stack : order) {
    for (const RawFrame& frame : *stack) java_frames += frame.kind != FrameKind::kNative ? 1 : 0;
  }
  EXPECT_EQ(static_cast<size_t>(atoi(line)), java_frames);
}

// Repository mode streams the chunk in progress: unreadable as finished, readable up to the last
// flush. A writer killed while it patches the chunk's header leaves it locked (generation 255)
// with the fields of the last flush (killed right after locking it) or of the flush it was
// publishing (killed before unlocking); both name bytes already written. A reader told that the
// writer is gone reads up to there; one that is not refuses.
TEST(JfrWriterTest, UnfinishedChunkIsReadableUpToItsLastFlush) {
  Recorder recorder(4, 50);
  recorder.config.repository = TempPath("unfinished");
  recorder.config.write_buffer_bytes = 1;  // bytes reach the file before they are published
  recorder.config.flush_interval_nanos = 0;
  ASSERT_NO_FATAL_FAILURE(recorder.Open());
  ASSERT_NO_FATAL_FAILURE(recorder.Add(0, 120));
  ASSERT_TRUE(IsOk(recorder.writer->Flush()));
  ASSERT_NO_FATAL_FAILURE(recorder.Add(120, 200));  // written to the file, not yet published
  const std::string chunk_file = recorder.config.repository + "/ctxprof-000001.jfr";
  const std::vector<uint8_t> snapshot = ReadBytes(chunk_file);

  JfrReader strict;
  const Status strict_read = strict.Parse("snapshot", snapshot, {});
  EXPECT_FALSE(strict_read.ok());
  EXPECT_NE(strict_read.message().find("offset 64: chunk is unfinished"), std::string::npos)
      << strict_read.message();

  JfrReader lenient;
  JfrReader::Options options;
  options.allow_unfinished_chunks = true;
  ASSERT_TRUE(IsOk(lenient.Parse("snapshot", snapshot, options)));
  ExpectSamplesMatch(recorder, lenient, 120);

  ASSERT_TRUE(IsOk(recorder.writer->Flush()));
  const std::vector<uint8_t> flushed = ReadBytes(chunk_file);
  for (const auto& [bytes, published] :
       {std::pair{snapshot, size_t{120}}, {flushed, size_t{200}}}) {
    std::vector<uint8_t> locked = bytes;
    ASSERT_GT(locked.size(), kChunkHeaderSize);
    locked[kChunkGenerationOffset] = kChunkGenerationLocked;

    JfrReader unaware;
    const Status refused = unaware.Parse("locked", locked, options);
    EXPECT_FALSE(refused.ok());
    EXPECT_NE(refused.message().find("offset 64: chunk header is being rewritten"),
              std::string::npos)
        << refused.message();
    EXPECT_TRUE(unaware.met_locked_header());

    JfrReader aware;
    JfrReader::Options writer_gone = options;
    writer_gone.read_locked_chunks = true;
    ASSERT_TRUE(IsOk(aware.Parse("locked", locked, writer_gone)));
    ASSERT_EQ(aware.chunks().size(), 1u);
    EXPECT_EQ(aware.chunks()[0].generation, kChunkGenerationLocked);
    ExpectSamplesMatch(recorder, aware, published);
  }
  ASSERT_TRUE(IsOk(recorder.writer->Close()));
}

// File mode publishes whole chunks: at every moment the file is a finished recording of every
// sample flushed so far, and nothing of what came after.
TEST(JfrWriterTest, GrowingFileIsFinishedAfterEveryFlush) {
  Recorder recorder(4, 50);
  recorder.config.path = TempPath("growing.jfr");
  recorder.config.flush_interval_nanos = 0;
  ASSERT_NO_FATAL_FAILURE(recorder.Open());
  EXPECT_TRUE(ReadBytes(recorder.config.path).empty()) << "nothing published before a flush";
  ASSERT_TRUE(IsOk(recorder.writer->Flush()));
  EXPECT_TRUE(ReadBytes(recorder.config.path).empty()) << "a flush without samples publishes";
  // Flushed: samples [0, 120); then one more sample held in memory; then flushed up to 200.
  for (const size_t flushed : {120, 200}) {
    ASSERT_NO_FATAL_FAILURE(recorder.Add(flushed == 120 ? 0 : 121, flushed));
    ASSERT_TRUE(IsOk(recorder.writer->Flush()));
    if (flushed == 120) {
      ASSERT_NO_FATAL_FAILURE(recorder.Add(120, 121));
    }
    JfrReader reader;
    ASSERT_TRUE(IsOk(reader.Parse("growing", ReadBytes(recorder.config.path), {})));
    EXPECT_EQ(reader.chunks().size(), flushed == 120 ? 1u : 2u);
    for (const JfrChunkInfo& chunk : reader.chunks()) EXPECT_EQ(chunk.generation, 0);
    ExpectSamplesMatch(recorder, reader, flushed);
  }
  ASSERT_TRUE(IsOk(recorder.writer->Close()));
  // Close folds the flushes' chunks into one, finished and final, in place.
  JfrReader reader;
  ASSERT_TRUE(IsOk(reader.Read(recorder.config.path, {})));
  ASSERT_EQ(reader.chunks().size(), 1u);
  EXPECT_EQ(reader.chunks()[0].generation, 0);
  EXPECT_TRUE(reader.chunks()[0].flags & kChunkFlagFinal);
  ExpectSamplesMatch(recorder, reader, 200);
  struct stat st;
  EXPECT_NE(stat((recorder.config.path + ".compacting").c_str(), &st), 0) << "left behind";
}

// Close folds each run of flush chunks into one chunk (one metadata record, each pool entry
// once, the run's settings and counters once); a rotation still starts a chunk of its own.
TEST(JfrWriterTest, FlushChunksAreFoldedAtCloseAndRotationsStay) {
  Recorder recorder(12, 100);
  recorder.config.path = TempPath("folded.jfr");
  recorder.config.flush_interval_nanos = 50000000;  // 50 ms: ~12 flushes per chunk
  ASSERT_NO_FATAL_FAILURE(recorder.Open());
  const size_t half = recorder.workload.samples.size() / 2;
  ASSERT_NO_FATAL_FAILURE(recorder.Add(0, half));
  ASSERT_TRUE(IsOk(recorder.writer->Rotate()));
  ASSERT_NO_FATAL_FAILURE(recorder.Add(half, recorder.workload.samples.size()));
  ASSERT_TRUE(IsOk(recorder.writer->Flush()));
  const uint64_t unfolded_bytes = recorder.writer->published()[0].bytes;
  {
    JfrReader reader;
    ASSERT_TRUE(IsOk(reader.Read(recorder.config.path, {})));
    ASSERT_GT(reader.chunks().size(), 10u) << "the test needs flush chunks to fold";
  }
  recorder.clock.Advance(recorder.clock.TicksPerSecond() / 1000);
  ASSERT_TRUE(IsOk(recorder.writer->Close()));
  EXPECT_EQ(recorder.writer->chunks_finished(), 2u);

  JfrReader reader;
  ASSERT_TRUE(IsOk(reader.Read(recorder.config.path, {})));
  EXPECT_EQ(reader.unknown_records(), 0u);
  ASSERT_EQ(reader.chunks().size(), 2u);
  EXPECT_LT(reader.chunks()[0].start_nanos, reader.chunks()[1].start_nanos);
  EXPECT_FALSE(reader.chunks()[0].flags & kChunkFlagFinal);
  EXPECT_TRUE(reader.chunks()[1].flags & kChunkFlagFinal);
  uint64_t file_bytes = 0;
  for (const JfrChunkInfo& chunk : reader.chunks()) file_bytes += chunk.size;
  EXPECT_LT(file_bytes, unfolded_bytes * 3 / 4);
  ExpectSamplesMatch(recorder, reader, recorder.workload.samples.size());
  std::map<std::pair<uint32_t, std::string>, int> per_chunk;  // (chunk, type) -> events
  for (const JfrEvent& event : reader.events()) per_chunk[{event.chunk, event.type_name()}]++;
  for (uint32_t chunk = 0; chunk < 2; chunk++) {
    EXPECT_EQ((per_chunk[{chunk, "ctxprof.ProfilerSettings"}]), 1) << chunk;
    EXPECT_EQ((per_chunk[{chunk, "ctxprof.ProfilerCounters"}]), 1) << chunk;
    EXPECT_EQ((per_chunk[{chunk, "jdk.ActiveSetting"}]), 2) << chunk;  // event and interval
  }
  // The last counters are the totals of the whole recording.
  const JfrEvent* counters = nullptr;
  for (const JfrEvent& event : reader.events()) {
    if (event.type_name() == "ctxprof.ProfilerCounters") counters = &event;
  }
  ASSERT_NE(counters, nullptr);
  EXPECT_EQ(counters->Field("samples").integer(),
            static_cast<int64_t>(recorder.workload.samples.size()));
}

// Names registered after the recording started (a tracer's ContextSetter after an agent's
// start) get their fields from the next chunk on: that chunk has its own metadata (another id,
// which the JDK's parser needs to read it anew, and another Context type id, which JDK 25's
// printer needs) and starts a new run of the fold, so the file folds into two chunks, each with
// the Context layout its events were written with.
TEST(JfrWriterTest, NamesRegisteredLaterAreRecordedFromTheNextChunkOn) {
  Recorder recorder(4, 100);
  recorder.config.path = TempPath("late-names.jfr");
  recorder.config.flush_interval_nanos = 50000000;  // 50 ms: several flush chunks
  // The workload's contexts set all three slots; only the first name is there at the start.
  std::unique_ptr<AttributeRegistry> all = std::move(recorder.workload.attributes);
  recorder.workload.attributes = std::make_unique<AttributeRegistry>();
  std::string error;
  ASSERT_TRUE(recorder.workload.attributes->Register({all->names()[0]}, &error)) << error;
  ASSERT_NO_FATAL_FAILURE(recorder.Open());
  const size_t half = recorder.workload.samples.size() / 2;
  ASSERT_NO_FATAL_FAILURE(recorder.Add(0, half));
  ASSERT_TRUE(IsOk(recorder.writer->Flush()));
  ASSERT_TRUE(recorder.workload.attributes->Register(all->names(), &error)) << error;
  ASSERT_NO_FATAL_FAILURE(recorder.Add(half, recorder.workload.samples.size()));
  recorder.clock.Advance(recorder.clock.TicksPerSecond() / 1000);
  ASSERT_TRUE(IsOk(recorder.writer->Close()));

  JfrReader reader;
  ASSERT_TRUE(IsOk(reader.Read(recorder.config.path, {})));
  EXPECT_EQ(reader.unknown_records(), 0u);
  ASSERT_EQ(reader.chunks().size(), 2u) << "one fold run per metadata";
  EXPECT_NE(reader.chunks()[0].metadata_id, reader.chunks()[1].metadata_id);
  std::set<std::map<std::string, std::string>> expected;  // every context's fields, all names
  for (size_t i = 0; i < recorder.workload.contexts.size(); i++) {
    expected.insert(recorder.workload.ContextFields(static_cast<int>(i)));
  }
  int contexts[2] = {0, 0};
  uint32_t type_ids[2] = {0, 0};
  for (const JfrEvent& event : reader.events()) {
    if (event.type_name() != "ctxprof.Context") continue;
    contexts[event.chunk]++;
    type_ids[event.chunk] = event.type->id;
    const bool late_fields =
        event.type->FieldIndex("tenant_id") >= 0 && event.type->FieldIndex("region") >= 0;
    EXPECT_EQ(late_fields, event.chunk == 1) << "chunk " << event.chunk;
    EXPECT_GE(event.type->FieldIndex("http_route"), 0);
    if (event.chunk == 1) {
      EXPECT_TRUE(expected.count(recorder.workload.FieldsOf(event)))
          << "a context of the workload, every attribute set";
    }
  }
  EXPECT_GT(contexts[0], 0);
  EXPECT_GT(contexts[1], 0);
  // JDK 25's `jfr print` keeps a type's Context fields by its id.
  EXPECT_NE(type_ids[0], type_ids[1]);
  // Every sample is still there.
  size_t samples = 0;
  for (const JfrEvent& event : reader.events()) {
    const std::string& type = event.type_name();
    samples += type == "jdk.ExecutionSample" || type == "profiler.WallClockSample" ? 1 : 0;
  }
  EXPECT_EQ(samples, recorder.workload.samples.size());
}

// A dump folds every chunk (no rotation boundaries); input that is not whole finished chunks is
// refused and left byte for byte as it was.
TEST(JfrWriterTest, FoldingAWholeFileAndRefusingABrokenOne) {
  Recorder recorder(12, 100);
  recorder.config.path = TempPath("refold.jfr");
  ASSERT_NO_FATAL_FAILURE(recorder.Open());
  const size_t half = recorder.workload.samples.size() / 2;
  ASSERT_NO_FATAL_FAILURE(recorder.Add(0, half));
  ASSERT_TRUE(IsOk(recorder.writer->Rotate()));
  ASSERT_NO_FATAL_FAILURE(recorder.Add(half, recorder.workload.samples.size()));
  recorder.clock.Advance(recorder.clock.TicksPerSecond() / 1000);
  ASSERT_TRUE(IsOk(recorder.writer->Close()));
  ASSERT_TRUE(IsOk(CompactRecordingFile(recorder.config.path, {})));
  JfrReader reader;
  ASSERT_TRUE(IsOk(reader.Read(recorder.config.path, {})));
  ASSERT_EQ(reader.chunks().size(), 1u);
  EXPECT_TRUE(reader.chunks()[0].flags & kChunkFlagFinal);
  ExpectSamplesMatch(recorder, reader, recorder.workload.samples.size());

  std::vector<uint8_t> bytes = ReadBytes(recorder.config.path);
  bytes.insert(bytes.end(), {'F', 'L', 'R', 0, 1, 2, 3});  // a torn chunk after the last one
  {
    std::ofstream out(recorder.config.path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
  }
  const Status refused = CompactRecordingFile(recorder.config.path, {});
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("offset"), std::string::npos) << refused.message();
  EXPECT_EQ(ReadBytes(recorder.config.path), bytes);
}

// A rewrite that cannot be done leaves the recording as it was: here a folder stands where the
// compacted chunk would be written.
TEST(JfrWriterTest, RecordingStaysWholeWhenItCannotBeFolded) {
  Recorder recorder(4, 50);
  recorder.config.path = TempPath("unfoldable.jfr");
  recorder.config.flush_interval_nanos = 0;
  ASSERT_NO_FATAL_FAILURE(recorder.Open());
  ASSERT_NO_FATAL_FAILURE(recorder.Add(0, 100));
  ASSERT_TRUE(IsOk(recorder.writer->Flush()));
  ASSERT_NO_FATAL_FAILURE(recorder.Add(100, 200));
  const std::string blocker = recorder.config.path + ".compacting";
  ASSERT_EQ(mkdir(blocker.c_str(), 0700), 0);
  const Status closed = recorder.writer->Close();
  rmdir(blocker.c_str());
  EXPECT_FALSE(closed.ok());
  EXPECT_NE(closed.message().find("not compacted"), std::string::npos) << closed.message();
  EXPECT_NE(closed.message().find(blocker), std::string::npos) << closed.message();
  JfrReader reader;
  ASSERT_TRUE(IsOk(reader.Read(recorder.config.path, {})));
  EXPECT_EQ(reader.chunks().size(), 2u);
  EXPECT_TRUE(reader.chunks()[1].flags & kChunkFlagFinal);
  ExpectSamplesMatch(recorder, reader, 200);
}

TEST(JfrWriterTest, FreshlyOpenedRepositoryChunkSaysUnfinishedNotEmpty) {
  Recorder recorder(1, 1);
  recorder.config.repository = TempPath("fresh");
  ASSERT_NO_FATAL_FAILURE(recorder.Open());
  JfrReader reader;
  JfrReader::Options options;
  options.allow_unfinished_chunks = true;
  const Status read =
      reader.Parse("fresh", ReadBytes(recorder.config.repository + "/ctxprof-000001.jfr"), options);
  EXPECT_FALSE(read.ok());
  EXPECT_NE(read.message().find("unfinished chunk published no data yet"), std::string::npos)
      << read.message();
}

// Truncated and corrupt input: an error naming an offset, never a crash or a hang.
class CorruptInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Recorder recorder(3, 12);
    recorder.config.path = TempPath("small.jfr");
    ASSERT_NO_FATAL_FAILURE(recorder.WriteAll());
    bytes_ = ReadBytes(recorder.config.path);
    JfrReader reader;
    ASSERT_TRUE(IsOk(reader.Parse("small", bytes_, {})));
  }
  static void ExpectErrorOrSuccess(const std::vector<uint8_t>& bytes, const char* what) {
    JfrReader reader;
    const Status read = reader.Parse("input", bytes, {});
    if (!read.ok()) {
      EXPECT_EQ(read.message().rfind("input: offset ", 0), 0u) << what << ": " << read.message();
    }
  }
  std::vector<uint8_t> bytes_;
};

TEST_F(CorruptInputTest, EveryTruncationIsAnError) {
  for (size_t length = 0; length < bytes_.size(); length++) {
    JfrReader reader;
    std::vector<uint8_t> prefix(bytes_.begin(), bytes_.begin() + length);
    const Status read = reader.Parse("input", prefix, {});
    ASSERT_FALSE(read.ok()) << "prefix " << length;
    ASSERT_EQ(read.message().rfind("input: offset ", 0), 0u) << read.message();
  }
}

TEST_F(CorruptInputTest, RandomByteChangesNeverCrash) {
  std::mt19937 random(1234);
  for (int round = 0; round < 1500; round++) {
    std::vector<uint8_t> mutated = bytes_;
    const int changes = 1 + static_cast<int>(random() % 4);
    for (int c = 0; c < changes; c++) {
      // Half of the changes hit the header and metadata, where sizes and offsets live.
      const size_t at = random() % 2 == 0 ? random() % std::min<size_t>(mutated.size(), 600)
                                          : random() % mutated.size();
      mutated[at] = static_cast<uint8_t>(random());
    }
    ExpectErrorOrSuccess(mutated, "mutation");
  }
}

TEST_F(CorruptInputTest, RandomDataAfterAValidHeaderIsAnError) {
  std::mt19937 random(99);
  for (int round = 0; round < 500; round++) {
    std::vector<uint8_t> garbage = bytes_;
    for (size_t i = 68 + random() % 200; i < garbage.size(); i++) {
      garbage[i] = static_cast<uint8_t>(random());
    }
    ExpectErrorOrSuccess(garbage, "garbage");
  }
  std::vector<uint8_t> trailing = bytes_;
  trailing.resize(trailing.size() + 16, 0);
  JfrReader reader;
  const Status read = reader.Parse("input", trailing, {});
  EXPECT_FALSE(read.ok());
  EXPECT_NE(read.message().find("offset " + std::to_string(bytes_.size())), std::string::npos)
      << read.message();
}

// Inputs of tests/fuzz/regressions/jfr_reader/ (runfiles), crafted from a chunk of our writer.
std::vector<uint8_t> RegressionInput(const std::string& name) {
  std::vector<uint8_t> bytes = ReadBytes("tests/fuzz/regressions/jfr_reader/" + name);
  EXPECT_FALSE(bytes.empty()) << name;
  return bytes;
}

// A checkpoint delta of INT64_MAX: offset + delta used to overflow (undefined behaviour).
TEST(JfrReaderRegressionTest, CheckpointDeltaBeyondTheChunkIsAnError) {
  JfrReader reader;
  const Status read = reader.Parse("input", RegressionInput("checkpoint_delta_overflow"), {});
  EXPECT_FALSE(read.ok());
  EXPECT_EQ(read.message(), "input: offset 4224: checkpoint delta points outside the chunk");
  EXPECT_EQ(read.code(), StatusCode::kInvalidArgument);
}

// A ctxprof.Context whose start + duration exceeds int64 (it used to overflow): open-ended.
TEST(JfrReaderRegressionTest, ContextEndBeyondInt64IsOpenEnded) {
  JfrReader reader;
  ASSERT_TRUE(IsOk(reader.Parse("input", RegressionInput("context_duration_overflow"), {})));
  const JfrEvent* context = nullptr;
  for (const JfrEvent& event : reader.events()) {
    if (event.type_name() == "ctxprof.Context") context = &event;
  }
  ASSERT_NE(context, nullptr);
  EXPECT_EQ(context->Field("duration").integer(), INT64_MAX);
  const int64_t tid = context->thread().Field("osThreadId").integer();
  EXPECT_EQ(reader.ContextAt(tid, context->start_ticks()), context);
  EXPECT_EQ(reader.ContextAt(tid, INT64_MAX - 1), context);
}

// 65 nested metadata elements, each claiming a third of the remaining data as children: the
// reader used to allocate every claimed child up front, ~1200x the input (a 256 KiB input took
// over 600 MB under ASan). Now children are allocated as read; the input is an error.
TEST(JfrReaderRegressionTest, MetadataChildCountsDoNotAllocateUpFront) {
  JfrReader reader;
  const Status read =
      reader.Parse("input", RegressionInput("metadata_children_claim_the_data"), {});
  EXPECT_FALSE(read.ok());
  EXPECT_EQ(read.message().rfind("input: offset ", 0), 0u) << read.message();
}

// An event class that declares 9344 fields, the first of its own type: values used to be
// allocated for all fields before reading any, at each of the 64 nesting levels (a 64 KiB input
// took 250 MB under ASan). Now they are allocated as read; the input is an error.
TEST(JfrReaderRegressionTest, FieldCountsDoNotAllocateUpFront) {
  JfrReader reader;
  const Status read =
      reader.Parse("input", RegressionInput("self_nesting_class_with_many_fields"), {});
  EXPECT_FALSE(read.ok());
  EXPECT_NE(read.message().find("values nested too deeply"), std::string::npos) << read.message();
}

// Tick conversions follow the JDK's Java long arithmetic: differences wrap, and quotients
// beyond the range saturate (in C++ both used to be undefined behaviour).
TEST(JfrReaderRegressionTest, TickConversionsUseJavaLongArithmetic) {
  JfrReader reader;
  ASSERT_TRUE(IsOk(reader.Parse("input", RegressionInput("context_start_ticks_min"), {})));
  const JfrChunkInfo& chunk = reader.chunks()[0];
  EXPECT_EQ(reader.EpochNanosOf(static_cast<int64_t>(chunk.start_ticks)), chunk.start_nanos);
  // INT64_MIN - start_ticks wraps to INT64_MAX - start_ticks + 1: far after the start.
  EXPECT_GT(reader.EpochNanosOf(INT64_MIN), chunk.start_nanos);

  // One tick per second: a second's worth of nanoseconds per tick, saturating like (long).
  std::vector<uint8_t> slow_clock = RegressionInput("context_start_ticks_min");
  const size_t ticks_per_second_at = 56;  // big-endian u8 in the chunk header
  std::fill(slow_clock.begin() + ticks_per_second_at, slow_clock.begin() + 64, 0);
  slow_clock[63] = 1;
  ASSERT_TRUE(IsOk(reader.Parse("input", slow_clock, {})));
  EXPECT_EQ(reader.NanosOf(3), 3000000000);
  EXPECT_EQ(reader.NanosOf(INT64_MAX), INT64_MAX);
  EXPECT_EQ(reader.NanosOf(INT64_MIN), INT64_MIN);
}

// Timed spans (SpanIntervals): a ctxprof.Context event is the span itself, written when a record
// falls inside it (a wait: by its start), or always with all_contexts; a record whose span
// arrives later still triggers it, and a record between spans has no context.
class TimedSpansTest : public ::testing::TestWithParam<bool> {};

TEST_P(TimedSpansTest, ContextEventsAreTheSpansThatHoldARecord) {
  const bool all = GetParam();
  FakeClock clock;
  FakeFrameResolver frames;
  FakeThreadResolver threads;
  const uint64_t ms = clock.TicksPerSecond() / 1000;
  const uint64_t t0 = clock.Now() + ms;
  Workload workload;
  std::string error;
  workload.dictionary = Dictionary::Create(Dictionary::Options{}, &error);
  workload.class_names = Dictionary::Create(Dictionary::Options{}, &error);
  ASSERT_TRUE(workload.attributes->Register({"endpoint"}, &error)) << error;
  workload.stacks = {{RawFrame{42, 3, FrameKind::kJavaJit}}};
  workload.stack_truncated = {false};
  for (uint64_t span = 1; span <= 4; span++) {
    ContextSnapshot context{};
    context.span_id = span;
    context.attributes[0] = workload.dictionary->Intern("/s" + std::to_string(span));
    workload.contexts.push_back(context);
  }
  EventFields wait{};
  wait.class_id = workload.class_names->Intern("java/lang/Object");
  wait.amount = 3 * ms;  // from t0 + 31 ms: inside span 3, which ends before the wait does
  wait.park_time = kNoParkTimeout;
  // Span 1 [t0, t0+10ms) holds a sample; span 2 [t0+10, t0+20) nothing; span 3 [t0+30, t0+32)
  // the wait's start; span 4 [t0+40, t0+50) a sample that arrives before the span does. A sample
  // at t0+25 lies between spans.
  workload.samples = {
      {SampleKind::kCpu, 7, t0 + 5 * ms, 0, 0, {}},
      {SampleKind::kCpu, 7, t0 + 25 * ms, 0, -1, {}},
      {SampleKind::kMonitorEnter, 7, t0 + 34 * ms, 0, 2, wait},
      {SampleKind::kCpu, 7, t0 + 45 * ms, 0, 3, {}},
  };
  JfrWriterConfig config;
  config.path = TempPath(all ? "spans_all.jfr" : "spans_triggered.jfr");
  config.engine = "perf_cpu_clock";
  config.lock_threshold_nanos = 1000000;
  config.all_contexts = all;
  JfrWriterInputs inputs = workload.Inputs(&clock, &frames, &threads);
  inputs.dropped_spans = [] { return uint64_t{5}; };
  StatusOr<std::unique_ptr<JfrWriter>> opened = JfrWriter::Open(config, inputs);
  ASSERT_TRUE(IsOk(opened));
  std::unique_ptr<JfrWriter> writer = std::move(opened.value());
  writer->AddTimedThreads({7});
  const uint64_t bounds[4][2] = {{0, 10}, {10, 20}, {30, 32}, {40, 50}};
  for (int span = 0; span < 3; span++) {
    writer->AddSpan(SpanInterval{7, t0 + bounds[span][0] * ms, t0 + bounds[span][1] * ms,
                                 workload.contexts[span]});
  }
  SampleRecord record;
  for (size_t i = 0; i < workload.samples.size(); i++) {
    workload.Fill(i, &record);
    clock.Set(record.ticks);
    ASSERT_TRUE(IsOk(writer->Add(record)));
  }
  writer->AddSpan(SpanInterval{7, t0 + 40 * ms, t0 + 50 * ms, workload.contexts[3]});
  writer->SettleSpans(UINT64_MAX);
  clock.Set(t0 + 60 * ms);
  ASSERT_TRUE(IsOk(writer->Close()));

  JfrReader reader;
  ASSERT_TRUE(IsOk(reader.Read(config.path, {})));
  std::map<int64_t, std::pair<int64_t, int64_t>> spans;  // span id -> [start, end) ticks
  const JfrEvent* counters = nullptr;
  for (const JfrEvent& event : reader.events()) {
    if (event.type_name() == "ctxprof.ProfilerCounters") counters = &event;
    if (event.type_name() != "ctxprof.Context") continue;
    const int64_t span = event.Field("spanId").integer();
    EXPECT_EQ(spans.count(span), 0u) << "span " << span << " written twice";
    spans[span] = {event.start_ticks(), event.start_ticks() + event.Field("duration").integer()};
  }
  std::map<int64_t, std::pair<int64_t, int64_t>> expected;
  for (int span = 0; span < 4; span++) {
    if (span == 1 && !all) continue;  // nothing recorded inside
    expected[span + 1] = {static_cast<int64_t>(t0 + bounds[span][0] * ms),
                          static_cast<int64_t>(t0 + bounds[span][1] * ms)};
  }
  EXPECT_EQ(spans, expected);
  auto span_at = [&reader](uint64_t ticks) -> std::string {
    const JfrEvent* context = reader.ContextAt(7, static_cast<int64_t>(ticks));
    return context == nullptr ? "-" : context->Field("endpoint").string();
  };
  EXPECT_EQ(span_at(t0 + 5 * ms), "/s1");
  EXPECT_EQ(span_at(t0 + 25 * ms), "-");
  EXPECT_EQ(span_at(t0 + 31 * ms), "/s3");  // the wait, by its start
  EXPECT_EQ(span_at(t0 + 45 * ms), "/s4");
  ASSERT_NE(counters, nullptr);
  EXPECT_EQ(counters->Field("timedSpans").integer(), all ? 4 : 3);
  EXPECT_EQ(counters->Field("droppedSpans").integer(), 5);
}

// Every sample of `reader` (there are `samples`) has a contextId, and its chunk carries the
// ctxprof.Context of that id (ids are per chunk).
void ExpectEachSampleContextInItsChunk(const JfrReader& reader, size_t samples) {
  std::set<std::pair<uint32_t, int64_t>> contexts;  // (chunk, contextId) of Context events
  std::vector<std::pair<uint32_t, int64_t>> used;   // (chunk, contextId) of samples
  for (const JfrEvent& event : reader.events()) {
    if (event.type_name() == "ctxprof.Context") {
      contexts.insert({event.chunk, event.Field("contextId").integer()});
    } else if (event.type_name() == "jdk.ExecutionSample") {
      used.push_back({event.chunk, event.Field("contextId").integer()});
    }
  }
  ASSERT_EQ(used.size(), samples);
  for (const auto& [chunk, id] : used) {
    EXPECT_NE(id, 0) << "chunk " << chunk;
    EXPECT_EQ(contexts.count({chunk, id}), 1u) << "chunk " << chunk << ", contextId " << id;
  }
}

// A span still open at a flush: the part holding the flushed records is written with that
// segment, and the rest when the span closes, without overlap.
TEST(TimedSpansCutTest, AnOpenSpanIsCutAtAFlush) {
  SpanScene scene(9, "/long");
  const uint64_t t0 = scene.t0, ms = scene.ms;
  scene.workload.samples = {scene.CpuAt(t0 + 5 * ms), scene.CpuAt(t0 + 15 * ms)};
  ASSERT_TRUE(IsOk(scene.Open(TempPath("spans_cut.jfr"), false)));
  // Open since t0, as read at t0 + 10 ms.
  scene.writer->SetOpenSpan(SpanScene::kTid, 0, t0, t0 + 10 * ms, scene.context);
  ASSERT_TRUE(IsOk(scene.AddSample(0)));
  ASSERT_TRUE(IsOk(scene.writer->Flush()));
  ASSERT_TRUE(IsOk(scene.AddSample(1)));
  scene.writer->AddSpan(SpanInterval{SpanScene::kTid, t0, t0 + 30 * ms, scene.context});
  ASSERT_TRUE(IsOk(scene.Close(t0 + 40 * ms)));

  JfrReader reader;
  ASSERT_TRUE(IsOk(reader.Read(scene.config.path, {})));
  EXPECT_EQ(ContextIntervals(reader), scene.CutParts(reader, t0 + 5 * ms, t0 + 30 * ms));
  for (uint64_t at : {t0 + 5 * ms, t0 + 15 * ms}) {
    EXPECT_EQ(
        reader.ContextAt(SpanScene::kTid, static_cast<int64_t>(at))->Field("endpoint").string(),
        "/long");
  }
}

// A span triggered before a rotation and holding a record after it: each chunk must carry a
// ctxprof.Context for the contextIds its samples use (ids are per chunk), and the parts written
// in the two chunks must not overlap.
TEST(TimedSpansCutTest, ASpanAcrossARotationIsInBothChunks) {
  SpanScene scene(9, "/long");
  const uint64_t t0 = scene.t0, ms = scene.ms;
  scene.workload.samples = {scene.CpuAt(t0 + 5 * ms), scene.CpuAt(t0 + 15 * ms)};
  ASSERT_TRUE(IsOk(scene.Open(TempPath("spans_rotated.jfr"), true)));
  // Drained before the records.
  scene.writer->AddSpan(SpanInterval{SpanScene::kTid, t0, t0 + 30 * ms, scene.context});
  ASSERT_TRUE(IsOk(scene.AddSample(0)));
  ASSERT_TRUE(IsOk(scene.writer->Rotate()));  // the span ends after every record settled so far
  ASSERT_TRUE(IsOk(scene.AddSample(1)));
  ASSERT_TRUE(IsOk(scene.Close(t0 + 40 * ms)));

  JfrReader reader;
  ASSERT_TRUE(IsOk(reader.Read(scene.config.path, {})));
  ASSERT_EQ(reader.chunks().size(), 2u);
  ExpectEachSampleContextInItsChunk(reader, 2);
  EXPECT_EQ(ContextIntervals(reader), scene.CutParts(reader, t0 + 5 * ms, t0 + 30 * ms));
}

// A record after the drain read the open interval (a dump writes every record up to now), then a
// rotation before its span is drained: the record's own context (its contextId) must be in its
// chunk, and the span, written later, must not overlap it.
TEST(TimedSpansCutTest, ARecordNewerThanTheDrainIsInItsChunk) {
  SpanScene scene(9, "/long");
  const uint64_t t0 = scene.t0, ms = scene.ms;
  scene.workload.samples = {scene.CpuAt(t0 + 15 * ms), scene.CpuAt(t0 + 20 * ms)};
  ASSERT_TRUE(IsOk(scene.Open(TempPath("spans_newer.jfr"), true)));
  // Open since t0, as read at t0 + 10 ms.
  scene.writer->SetOpenSpan(SpanScene::kTid, 0, t0, t0 + 10 * ms, scene.context);
  ASSERT_TRUE(IsOk(scene.AddSample(0)));
  ASSERT_TRUE(IsOk(scene.writer->Rotate()));
  scene.writer->AddSpan(SpanInterval{SpanScene::kTid, t0, t0 + 30 * ms, scene.context});
  ASSERT_TRUE(IsOk(scene.AddSample(1)));
  ASSERT_TRUE(IsOk(scene.Close(t0 + 40 * ms)));

  JfrReader reader;
  ASSERT_TRUE(IsOk(reader.Read(scene.config.path, {})));
  ASSERT_EQ(reader.chunks().size(), 2u);
  ExpectEachSampleContextInItsChunk(reader, 2);
  // The open span, cut just after the record it holds (2 ns later, as the JDK converts), then
  // its rest.
  EXPECT_EQ(ContextIntervals(reader), scene.CutParts(reader, t0 + 15 * ms, t0 + 30 * ms));
}

// Every sample of `scene` finds its own context's span in `reader` at its time (ContextAt).
void ExpectEverySampleInItsSpan(const SpanScene& scene, const JfrReader& reader) {
  for (const ExpectedSample& expected : scene.workload.samples) {
    const uint64_t at_ms = (expected.ticks - scene.t0) / scene.ms;
    const JfrEvent* found = reader.ContextAt(SpanScene::kTid, static_cast<int64_t>(expected.ticks));
    ASSERT_NE(found, nullptr) << "no context at t0 + " << at_ms << " ms";
    EXPECT_EQ(found->Field("spanId").integer(),
              static_cast<int64_t>(scene.workload.contexts[expected.context].span_id))
        << "at t0 + " << at_ms << " ms";
  }
}

// A thread whose span log was full lost its spans between t0 + 10 ms and t0 + 30 ms (the span
// drained after them carries lost_since): records in that stretch keep the contexts they read
// themselves, each run written from its first record to just after its last, inside the
// stretch, so that every record finds its context in its chunk. `open_moved_on`: the drain read
// the next open interval before the span after the loss came (the log was still full), so a
// record of the lost span is known only by the open interval it was joined in, and one came
// after the drain had moved on (a guess).
class LostSpansTest : public ::testing::TestWithParam<bool> {};

TEST_P(LostSpansTest, RecordsInALostStretchKeepTheirOwnContexts) {
  const bool open_moved_on = GetParam();
  SpanScene scene(9, "/before");
  const uint64_t t0 = scene.t0, ms = scene.ms;
  Workload& workload = scene.workload;
  const int lost_a = scene.AddContext(20, "/lost-a"), lost_b = scene.AddContext(21, "/lost-b");
  const int after = scene.AddContext(22, "/after");
  workload.samples = {scene.CpuIn(t0 + 5 * ms, 0), scene.CpuIn(t0 + 12 * ms, lost_a),
                      scene.CpuIn(t0 + 14 * ms, lost_a), scene.CpuIn(t0 + 22 * ms, lost_b),
                      scene.CpuIn(t0 + 35 * ms, after)};
  ASSERT_TRUE(IsOk(scene.Open(TempPath("spans_lost.jfr"), true)));
  scene.writer->AddSpan(SpanInterval{SpanScene::kTid, t0, t0 + 10 * ms, scene.context});
  // The lost span /lost-a was open when the drain read the log.
  scene.writer->SetOpenSpan(SpanScene::kTid, 0, t0 + 10 * ms, t0 + 13 * ms,
                            workload.contexts[lost_a]);
  ASSERT_TRUE(IsOk(scene.AddSample(0)));
  ASSERT_TRUE(IsOk(scene.AddSample(1)));
  const SpanInterval span_after{
      SpanScene::kTid, t0 + 30 * ms, t0 + 40 * ms, workload.contexts[after], 0, true, t0 + 10 * ms};
  if (open_moved_on) {
    scene.writer->SetOpenSpan(SpanScene::kTid, 0, t0 + 20 * ms, t0 + 25 * ms,
                              workload.contexts[lost_b]);
    ASSERT_TRUE(IsOk(scene.AddSample(2)));  // after the open interval it was in: a guess
    ASSERT_TRUE(IsOk(scene.AddSample(3)));  // in the open interval /lost-b
    scene.writer->AddSpan(span_after);
  } else {
    scene.writer->AddSpan(span_after);
    ASSERT_TRUE(IsOk(scene.AddSample(2)));
    ASSERT_TRUE(IsOk(scene.AddSample(3)));
  }
  ASSERT_TRUE(IsOk(scene.AddSample(4)));
  ASSERT_TRUE(IsOk(scene.Close(t0 + 50 * ms)));

  JfrReader reader;
  ASSERT_TRUE(IsOk(reader.Read(scene.config.path, {})));
  ExpectEachSampleContextInItsChunk(reader, workload.samples.size());
  ExpectEverySampleInItsSpan(scene, reader);
  const std::vector<std::pair<int64_t, int64_t>> expected_intervals = {
      {static_cast<int64_t>(t0), static_cast<int64_t>(t0 + 10 * ms)},
      {static_cast<int64_t>(t0 + 12 * ms), CutAfter(reader, static_cast<int64_t>(t0 + 14 * ms))},
      {static_cast<int64_t>(t0 + 22 * ms), CutAfter(reader, static_cast<int64_t>(t0 + 22 * ms))},
      {static_cast<int64_t>(t0 + 30 * ms), static_cast<int64_t>(t0 + 40 * ms)}};
  EXPECT_EQ(ContextIntervals(reader), expected_intervals);
}

// A record joined from its own context (its span not drained yet) that the spans drained next
// pass without covering (on JDK 17 the span clock is System.nanoTime, converted: a record in a
// request of a few microseconds can fall just outside it) is in the gap before them. At a chunk
// end it must not push the thread's written part past the records still to come: those in a
// lost stretch, joined after the flush, keep their own contexts (EventsTest's churn under load
// lost 15 % of them, in a burst after every flush that followed a stall of the writer).
TEST(GuessInAGapTest, RecordsJoinedAfterTheFlushKeepTheirContexts) {
  SpanScene scene(9, "/before");
  const uint64_t t0 = scene.t0, ms = scene.ms;
  Workload& workload = scene.workload;
  const int gap = scene.AddContext(20, "/gap"), lost = scene.AddContext(21, "/lost");
  const int after = scene.AddContext(22, "/after");
  workload.samples = {scene.CpuIn(t0 + 15 * ms, gap), scene.CpuIn(t0 + 30 * ms, lost),
                      scene.CpuIn(t0 + 45 * ms, after)};
  ASSERT_TRUE(IsOk(scene.Open(TempPath("guess_in_gap.jfr"), true)));
  scene.writer->AddSpan(SpanInterval{SpanScene::kTid, t0, t0 + 10 * ms, scene.context});
  ASSERT_TRUE(IsOk(scene.AddSample(0)));  // after every span drained so far: a guess
  // The next drain: the log lost the spans of [20, 40) ms, then /after.
  scene.writer->AddSpan(SpanInterval{SpanScene::kTid, t0 + 40 * ms, t0 + 50 * ms,
                                     workload.contexts[after], 0, true, t0 + 20 * ms});
  scene.clock.Set(t0 + 55 * ms);
  ASSERT_TRUE(IsOk(scene.writer->Flush()));
  ASSERT_TRUE(IsOk(scene.AddSample(1)));  // released by the reorderer after the flush
  ASSERT_TRUE(IsOk(scene.AddSample(2)));
  ASSERT_TRUE(IsOk(scene.Close(t0 + 60 * ms)));

  JfrReader reader;
  ASSERT_TRUE(IsOk(reader.Read(scene.config.path, {})));
  ExpectEachSampleContextInItsChunk(reader, workload.samples.size());
  ExpectEverySampleInItsSpan(scene, reader);
}

// The same at a chunk end before the spans come: a record taken in the open span but, by the
// converted span clock, just before its begin is a guess of the open span's context. Its
// interval starts at its record, not at the open span's begin, so that the records of the lost
// stretch before it, joined after the flush, are not taken for written.
TEST(GuessInAGapTest, AGuessJustBeforeTheOpenSpanStartsAtItsRecord) {
  SpanScene scene(9, "/before");
  const uint64_t t0 = scene.t0, ms = scene.ms;
  Workload& workload = scene.workload;
  const int open = scene.AddContext(20, "/open"), lost = scene.AddContext(21, "/lost");
  workload.samples = {scene.CpuIn(t0 + 28 * ms, open), scene.CpuIn(t0 + 20 * ms, lost)};
  ASSERT_TRUE(IsOk(scene.Open(TempPath("guess_before_open.jfr"), true)));
  scene.writer->AddSpan(SpanInterval{SpanScene::kTid, t0, t0 + 10 * ms, scene.context});
  scene.writer->SetOpenSpan(SpanScene::kTid, 0, t0 + 30 * ms, t0 + 32 * ms,
                            workload.contexts[open]);
  ASSERT_TRUE(IsOk(scene.AddSample(0)));
  scene.clock.Set(t0 + 35 * ms);
  ASSERT_TRUE(IsOk(scene.writer->Flush()));
  // The next drain: the open span closed, the first record after the log lost [12, 30) ms.
  scene.writer->AddSpan(SpanInterval{SpanScene::kTid, t0 + 30 * ms, t0 + 40 * ms,
                                     workload.contexts[open], 0, true, t0 + 12 * ms});
  ASSERT_TRUE(IsOk(scene.AddSample(1)));  // a record the reorderer released late
  ASSERT_TRUE(IsOk(scene.Close(t0 + 60 * ms)));

  JfrReader reader;
  ASSERT_TRUE(IsOk(reader.Read(scene.config.path, {})));
  ExpectEachSampleContextInItsChunk(reader, workload.samples.size());
  ExpectEverySampleInItsSpan(scene, reader);
}

// A virtual thread's record in the stretch its carrier's log lost keeps its own context too,
// in an interval of the virtual thread's.
TEST(LostSpansVirtualThreadTest, ARecordInItsCarriersLossKeepsItsContext) {
  SpanScene scene(9, "/before");
  const uint64_t t0 = scene.t0, ms = scene.ms;
  scene.workload.samples = {scene.CpuIn(t0 + 20 * ms, scene.AddContext(20, "/lost"))};
  ASSERT_TRUE(IsOk(scene.Open(TempPath("spans_lost_virtual.jfr"), true)));
  scene.writer->AddSpan(SpanInterval{SpanScene::kTid, t0, t0 + 10 * ms, scene.context});
  // The first record after the loss is the virtual thread's next span: the sample falls between
  // two of its spans' times, in no span it knows.
  scene.writer->AddSpan(SpanInterval{SpanScene::kTid, t0 + 25 * ms, t0 + 28 * ms, scene.context, 77,
                                     true, t0 + 10 * ms});
  scene.writer->AddSpan(SpanInterval{SpanScene::kTid, t0 + 30 * ms, t0 + 40 * ms, scene.context});
  SampleRecord record;
  scene.workload.Fill(0, &record);
  record.virtual_thread_id = 77;
  scene.clock.Set(record.ticks);
  ASSERT_TRUE(IsOk(scene.writer->Add(record)));
  ASSERT_TRUE(IsOk(scene.Close(t0 + 50 * ms)));

  JfrReader reader;
  ASSERT_TRUE(IsOk(reader.Read(scene.config.path, {})));
  ExpectEachSampleContextInItsChunk(reader, 1);
  int64_t sample_context = 0;
  std::map<int64_t, std::pair<int64_t, int64_t>> lost_intervals;  // contextId -> interval
  for (const JfrEvent& event : reader.events()) {
    if (event.type_name() == "jdk.ExecutionSample")
      sample_context = event.Field("contextId").integer();
    if (event.type_name() == "ctxprof.Context" && event.Field("spanId").integer() == 20) {
      lost_intervals[event.Field("contextId").integer()] = {
          event.start_ticks(), event.start_ticks() + event.Field("duration").integer()};
    }
  }
  ASSERT_EQ(lost_intervals.count(sample_context), 1u);
  EXPECT_EQ(lost_intervals[sample_context],
            std::make_pair(static_cast<int64_t>(t0 + 20 * ms),
                           CutAfter(reader, static_cast<int64_t>(t0 + 20 * ms))));
}

INSTANTIATE_TEST_SUITE_P(OpenInterval, LostSpansTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "MovedOn" : "Kept";
                         });

// A record that comes after its span was settled (a wall repeat of a sampler that woke late on a
// loaded machine) still joins it, with one Context event for the span whether or not it had been
// written (contexts=all) or not (triggered) when it settled; one older than the spans kept joins
// none.
class LateRecordTest : public ::testing::TestWithParam<bool> {};

TEST_P(LateRecordTest, ALateRecordJoinsItsSettledSpan) {
  SpanScene scene(9, "/settled");
  const uint64_t t0 = scene.t0, ms = scene.ms;
  const uint64_t late = t0 + 55 * ms, too_late = t0 + 2 * ms;
  scene.config.all_contexts = GetParam();
  scene.workload.samples = {scene.CpuAt(late), scene.CpuAt(too_late)};
  ASSERT_TRUE(IsOk(scene.Open(TempPath("spans_late.jfr"), true)));
  // Spans of 10 ms from t0; the first two fall out of the kept ones.
  const uint64_t spans = SpanIntervals::kLateJoinSpans + 2;
  for (uint64_t i = 0; i < spans; i++) {
    scene.writer->AddSpan(
        SpanInterval{SpanScene::kTid, t0 + i * 10 * ms, t0 + (i + 1) * 10 * ms, scene.context});
  }
  scene.writer->SettleSpans(t0 + (spans + 5) * 10 * ms);
  ASSERT_TRUE(IsOk(scene.AddSample(0)));  // in span 5, settled before it came
  ASSERT_TRUE(IsOk(scene.AddSample(1)));  // in span 0, no longer kept
  ASSERT_TRUE(IsOk(scene.Close(t0 + (spans + 6) * 10 * ms)));

  JfrReader reader;
  ASSERT_TRUE(IsOk(reader.Read(scene.config.path, {})));
  std::map<int64_t, int64_t> context_of;                       // sample time -> contextId
  std::map<int64_t, std::pair<int64_t, int64_t>> interval_of;  // contextId -> its interval
  size_t holding_late = 0;
  for (const JfrEvent& event : reader.events()) {
    if (event.type_name() == "jdk.ExecutionSample") {
      context_of[event.start_ticks()] = event.Field("contextId").integer();
    } else if (event.type_name() == "ctxprof.Context") {
      const int64_t begin = event.start_ticks();
      const int64_t end = begin + event.Field("duration").integer();
      if (begin <= static_cast<int64_t>(late) && static_cast<int64_t>(late) < end) {
        holding_late++;
        interval_of[event.Field("contextId").integer()] = {begin, end};
      }
    }
  }
  ASSERT_EQ(context_of.size(), 2u);
  const int64_t late_id = context_of[static_cast<int64_t>(late)];
  EXPECT_NE(late_id, 0);
  EXPECT_EQ(holding_late, 1u) << "the late record's span is written once";
  EXPECT_EQ(interval_of[late_id],
            std::make_pair(static_cast<int64_t>(t0 + 50 * ms), static_cast<int64_t>(t0 + 60 * ms)))
      << "whole";
  EXPECT_EQ(
      reader.ContextAt(SpanScene::kTid, static_cast<int64_t>(late))->Field("endpoint").string(),
      "/settled");
  EXPECT_EQ(context_of[static_cast<int64_t>(too_late)], 0) << "older than the spans kept";
}

INSTANTIATE_TEST_SUITE_P(ContextsOption, LateRecordTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "All" : "Triggered";
                         });

INSTANTIATE_TEST_SUITE_P(ContextsOption, TimedSpansTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "All" : "Triggered";
                         });

}  // namespace
}  // namespace ctxprof
