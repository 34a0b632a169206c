// ctxprof.SpanLatency: the bucket scheme (LatencyHistogram), and the writer's histograms of every
// closed span per attribute-value set, triggered or not, a cut span counted once with its whole
// length, a span still open at the end not at all.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>

#include "profiler/base/latency_histogram.h"
#include "profiler/jfr/jfr_reader.h"
#include "profiler/jfr_events/jfr_writer.h"
#include "tests/jfr/synthetic.h"
#include "tests/support/status_testing.h"

namespace ctxprof {
namespace {

TEST(LatencyHistogramTest, BucketsAreExactBelow128NsThenAtMostOne64thWide) {
  for (int64_t nanos = 0; nanos < 128; nanos++) {
    EXPECT_EQ(LatencyHistogram::FloorOf(nanos), nanos);
    EXPECT_EQ(LatencyHistogram::WidthOf(nanos), 1);
  }
  EXPECT_EQ(LatencyHistogram::FloorOf(-5), 0);
  EXPECT_EQ(LatencyHistogram::FloorOf(128), 128);
  EXPECT_EQ(LatencyHistogram::FloorOf(129), 128);
  EXPECT_EQ(LatencyHistogram::FloorOf(130), 130);
  EXPECT_EQ(LatencyHistogram::WidthOf(128), 2);
  // 10 ms = 10,000,000 ns: 2^23 <= it < 2^24, width 2^17 = 131072.
  EXPECT_EQ(LatencyHistogram::WidthOf(LatencyHistogram::FloorOf(10000000)), 131072);
  EXPECT_EQ(LatencyHistogram::FloorOf(10000000), 76 * 131072);
  // Every value falls in [floor, floor + width), and the width is at most floor / 64; floors
  // are contiguous.
  for (int64_t nanos = 1; nanos < (int64_t{1} << 60); nanos = nanos / 2 * 3 + 7) {
    const int64_t floor = LatencyHistogram::FloorOf(nanos);
    const int64_t width = LatencyHistogram::WidthOf(floor);
    EXPECT_LE(floor, nanos);
    EXPECT_LT(nanos, floor + width);
    EXPECT_EQ(LatencyHistogram::FloorOf(floor + width - 1), floor);
    EXPECT_EQ(LatencyHistogram::FloorOf(floor + width), floor + width);
    if (floor >= 128) {
      EXPECT_LE(width * 64, floor);
    }
  }
  EXPECT_EQ(LatencyHistogram::FloorOf(INT64_MAX), INT64_MAX - ((int64_t{1} << 56) - 1));
}

TEST(LatencyHistogramTest, PercentilesAreWithinHalfABucketOfTheNearestRank) {
  LatencyHistogram histogram;
  EXPECT_EQ(histogram.Percentile(50), 0);
  // 1..1000 ms: the nearest-rank p50 is 500 ms, p90 900 ms, p99 990 ms.
  for (int64_t ms = 1; ms <= 1000; ms++) histogram.Add(ms * 1000000);
  EXPECT_EQ(histogram.count(), 1000);
  EXPECT_EQ(histogram.sum(), 500500 * int64_t{1000000});
  EXPECT_EQ(histogram.max(), 1000000000);
  for (const auto& [percent, truth] :
       std::map<double, int64_t>{{50, 500000000}, {90, 900000000}, {99, 990000000}}) {
    const int64_t estimate = histogram.Percentile(percent);
    EXPECT_LE(std::llabs(estimate - truth), truth / 128) << percent;
  }
  EXPECT_EQ(histogram.Percentile(100), 1000000000);                // clamped to the exact max
  const int64_t first_floor = LatencyHistogram::FloorOf(1000000);  // rank 1: its bucket's middle
  EXPECT_EQ(histogram.Percentile(0.01), first_floor + LatencyHistogram::WidthOf(first_floor) / 2);
  // Read back bucket by bucket, and merged: the same answers.
  LatencyHistogram rebuilt, merged;
  for (const auto& [floor, count] : histogram.counts()) rebuilt.AddBucket(floor, count, 0, 0);
  rebuilt.AddBucket(0, 0, histogram.sum(), histogram.max());
  merged.Merge(rebuilt);
  EXPECT_EQ(merged.counts(), histogram.counts());
  EXPECT_EQ(merged.count(), histogram.count());
  EXPECT_EQ(merged.Percentile(90), histogram.Percentile(90));
  EXPECT_EQ(merged.max(), histogram.max());
  // The event's text form, and what is not that form.
  LatencyHistogram parsed;
  ASSERT_TRUE(parsed.AddBucketDeltasText(histogram.BucketDeltasText()));
  EXPECT_EQ(parsed.counts(), histogram.counts());
  EXPECT_TRUE(parsed.AddBucketDeltasText(""));
  EXPECT_EQ(LatencyHistogram().BucketDeltasText(), "");
  for (const char* bad :
       {"5:", ":5", "5 ", "5,6", "-5", "5:x", "5:0", "5 0", "0 3712", "1234567890123456789"}) {
    EXPECT_FALSE(parsed.AddBucketDeltasText(bad)) << bad;
  }
  EXPECT_EQ(parsed.count(), histogram.count());
  // Floors below 128 ns, the first buckets of the next powers of two, and the last bucket.
  LatencyHistogram edges;
  for (int64_t nanos : {int64_t{0}, int64_t{5}, int64_t{5}, int64_t{127}, int64_t{128},
                        int64_t{130}, int64_t{256}, INT64_MAX}) {
    edges.Add(nanos);
  }
  EXPECT_EQ(edges.BucketDeltasText(), "0 5:2 122 1 1 63 3519");
  LatencyHistogram edges_parsed;
  ASSERT_TRUE(edges_parsed.AddBucketDeltasText(edges.BucketDeltasText()));
  EXPECT_EQ(edges_parsed.counts(), edges.counts());
  for (int index = 0; index < LatencyHistogram::kBucketCount; index++) {
    const int64_t floor = LatencyHistogram::FloorOfIndex(index);
    ASSERT_EQ(LatencyHistogram::FloorOf(floor), floor) << index;
    ASSERT_EQ(LatencyHistogram::IndexOf(floor), index) << index;
  }
  // The `buckets` field of older recordings: FLOOR:COUNT.
  LatencyHistogram older;
  ASSERT_TRUE(older.AddBucketsText("21760:784 22016:1"));
  EXPECT_EQ(older.counts(), (std::map<int64_t, int64_t>{{21760, 784}, {22016, 1}}));
  for (const char* bad :
       {"5", "5:", ":5", "5:1 ", "5:1,6:2", "-5:1", "5:x", "1234567890123456789:1"}) {
    EXPECT_FALSE(older.AddBucketsText(bad)) << bad;
  }
}

std::vector<uint8_t> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

std::string TempPath(const std::string& name) {
  const char* dir = getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

// Spans of /a (10, 20 and 30 ms; the 20 ms one cut at a flush, the 30 ms one holding a sample
// across a rotation) and /b (5 ms, nothing recorded inside, so under contexts=triggered it has no
// ctxprof.Context), and a /b span still open at the end: the SpanLatency events of the file add
// up to /a 3 spans, sum 60 ms, max 30 ms and /b 1 span of 5 ms.
TEST(SpanLatencyTest, EveryClosedSpanCountsOnceWithItsWholeLength) {
  SpanScene scene(1, "/a");
  const uint64_t t0 = scene.t0, ms = scene.ms;
  Workload& workload = scene.workload;
  auto context_of = [&](uint64_t span, const std::string& endpoint) {
    ContextSnapshot context{};
    context.span_id = span;
    context.attributes[0] = workload.dictionary->Intern(endpoint);
    return context;
  };
  workload.contexts = {context_of(1, "/a"), context_of(2, "/a"), context_of(3, "/a")};
  workload.samples = {
      {SampleKind::kCpu, 7, t0 + 5 * ms, 0, 0, {}},   // span 1 [t0, t0+10)
      {SampleKind::kCpu, 7, t0 + 15 * ms, 0, 1, {}},  // span 2 [t0+10, t0+30), open at a flush
      {SampleKind::kCpu, 7, t0 + 35 * ms, 0, 2, {}},  // span 3 [t0+30, t0+60), a rotation at 40
      {SampleKind::kCpu, 7, t0 + 45 * ms, 0, 2, {}},
  };
  ASSERT_TRUE(IsOk(scene.Open(TempPath("span_latency.jfr"), false)));
  JfrWriter* writer = scene.writer.get();
  writer->AddSpan(SpanInterval{7, t0, t0 + 10 * ms, workload.contexts[0]});
  ASSERT_TRUE(IsOk(scene.AddSample(0)));
  writer->SetOpenSpan(7, 0, t0 + 10 * ms, t0 + 16 * ms, workload.contexts[1]);
  ASSERT_TRUE(IsOk(scene.AddSample(1)));
  ASSERT_TRUE(IsOk(writer->Flush()));  // cuts span 2
  writer->AddSpan(SpanInterval{7, t0 + 10 * ms, t0 + 30 * ms, workload.contexts[1]});
  writer->SetOpenSpan(7, 0, t0 + 30 * ms, t0 + 36 * ms, workload.contexts[2]);
  ASSERT_TRUE(IsOk(scene.AddSample(2)));
  ASSERT_TRUE(IsOk(writer->Rotate()));
  ASSERT_TRUE(IsOk(scene.AddSample(3)));
  writer->AddSpan(SpanInterval{7, t0 + 30 * ms, t0 + 60 * ms, workload.contexts[2]});
  writer->AddSpan(SpanInterval{8, t0 + 50 * ms, t0 + 55 * ms, context_of(4, "/b")});
  SpanInterval open_at_end{8, t0 + 70 * ms, t0 + 80 * ms, context_of(5, "/b")};
  open_at_end.closed = false;
  writer->AddSpan(open_at_end);
  ASSERT_TRUE(IsOk(scene.Close(t0 + 90 * ms)));

  JfrReader reader;
  ASSERT_TRUE(IsOk(reader.Read(scene.config.path, {})));
  ASSERT_GE(reader.chunks().size(), 2u);
  std::map<std::string, LatencyHistogram> histograms;
  std::map<std::string, int> context_events;
  for (const JfrEvent& event : reader.events()) {
    if (event.type_name() == "ctxprof.Context") context_events[event.Field("endpoint").string()]++;
    if (event.type_name() != "ctxprof.SpanLatency") continue;
    LatencyHistogram& histogram = histograms[event.Field("endpoint").string()];
    LatencyHistogram event_histogram;
    ASSERT_TRUE(event_histogram.AddBucketDeltasText(event.Field("bucketDeltas").string()));
    const int64_t spans = event_histogram.count();
    histogram.Merge(event_histogram);
    EXPECT_EQ(event.Field("spans").integer(), spans);
    histogram.AddBucket(0, 0, event.Field("totalDuration").integer(),
                        event.Field("maxDuration").integer());
  }
  ASSERT_EQ(histograms.size(), 2u);
  const LatencyHistogram& a = histograms["/a"];
  EXPECT_EQ(a.count(), 3);
  EXPECT_EQ(a.sum(), 60000000);
  EXPECT_EQ(a.max(), 30000000);
  EXPECT_EQ(a.counts(), (std::map<int64_t, int64_t>{{LatencyHistogram::FloorOf(10000000), 1},
                                                    {LatencyHistogram::FloorOf(20000000), 1},
                                                    {LatencyHistogram::FloorOf(30000000), 1}}));
  const LatencyHistogram& b = histograms["/b"];
  EXPECT_EQ(b.count(), 1);
  EXPECT_EQ(b.sum(), 5000000);
  // /a's spans were written in parts (span 2 cut at the flush, span 3 at the rotation); /b's
  // closed span holds no record, so no Context event under contexts=triggered.
  EXPECT_GE(context_events["/a"], 5);
  EXPECT_EQ(context_events.count("/b"), 0u);
}

// Spans whose values differ only in a slot the event has no field for (an attribute registered
// after the recording started) are one group: one SpanLatency event per segment, not one per
// value of that slot.
TEST(SpanLatencyTest, SlotsPastTheEventsFieldsDoNotSplitAGroup) {
  SpanScene scene(1, "/a");
  const uint64_t t0 = scene.t0, ms = scene.ms;
  Workload& workload = scene.workload;
  ASSERT_TRUE(IsOk(scene.Open(TempPath("span_latency_slots.jfr"), false)));
  JfrWriter* writer = scene.writer.get();
  constexpr int kSpans = 8;
  for (int i = 0; i < kSpans; i++) {
    ContextSnapshot context{};
    context.span_id = i + 1;
    context.attributes[0] = workload.dictionary->Intern("/a");
    context.attributes[1] = workload.dictionary->Intern("late-" + std::to_string(i));
    writer->AddSpan(SpanInterval{7, t0 + i * ms, t0 + (i + 1) * ms, context});
  }
  writer->SetOpenSpan(7, 0, t0 + kSpans * ms, t0 + kSpans * ms, ContextSnapshot{});
  ASSERT_TRUE(IsOk(scene.Close(t0 + 20 * ms)));

  JfrReader reader;
  ASSERT_TRUE(IsOk(reader.Read(scene.config.path, {})));
  int events = 0;
  int64_t spans = 0;
  for (const JfrEvent& event : reader.events()) {
    if (event.type_name() != "ctxprof.SpanLatency") continue;
    EXPECT_EQ(event.Field("endpoint").string(), "/a");
    events++;
    spans += event.Field("spans").integer();
  }
  EXPECT_EQ(events, 1);
  EXPECT_EQ(spans, kSpans);
}

// A tracer opens a span with its ids, then sets its attributes: three intervals of one span,
// counted as one span of their whole length under the attributes it closed with, once the thread
// has gone on to another context; a span nested in it splits it; one open at the end is not
// counted.
TEST(SpanLatencyTest, TheIntervalsOfOneSpanCountAsOneSpan) {
  SpanScene scene(1, "/a", {"endpoint", "tenant"});
  const uint64_t t0 = scene.t0, ms = scene.ms;
  Workload& workload = scene.workload;
  auto context_of = [&](uint64_t span, const char* endpoint, const char* tenant) {
    ContextSnapshot context{};
    context.trace_id_low = 99;
    context.span_id = span;
    if (endpoint != nullptr) context.attributes[0] = workload.dictionary->Intern(endpoint);
    if (tenant != nullptr) context.attributes[1] = workload.dictionary->Intern(tenant);
    return context;
  };
  ASSERT_TRUE(IsOk(scene.Open(TempPath("span_latency_merge.jfr"), false)));
  JfrWriter* writer = scene.writer.get();
  // Span 1: [t0, t0 + 12 ms) in three intervals (ids; + endpoint; + tenant).
  writer->AddSpan(SpanInterval{7, t0, t0 + 1 * ms, context_of(1, nullptr, nullptr)});
  writer->AddSpan(SpanInterval{7, t0 + 1 * ms, t0 + 2 * ms, context_of(1, "/a", nullptr)});
  writer->AddSpan(SpanInterval{7, t0 + 2 * ms, t0 + 12 * ms, context_of(1, "/a", "acme")});
  // The thread's context is empty at the drain: span 1 is complete.
  writer->SetOpenSpan(7, 0, t0 + 12 * ms, t0 + 13 * ms, ContextSnapshot{});
  // Span 2 [t0 + 20, t0 + 40) with span 3 nested in [t0 + 25, t0 + 30): 2 counts twice (5 and
  // 10 ms), 3 once (5 ms).
  writer->AddSpan(SpanInterval{7, t0 + 20 * ms, t0 + 25 * ms, context_of(2, "/b", nullptr)});
  writer->AddSpan(SpanInterval{7, t0 + 25 * ms, t0 + 30 * ms, context_of(3, "/c", nullptr)});
  writer->AddSpan(SpanInterval{7, t0 + 30 * ms, t0 + 40 * ms, context_of(2, "/b", nullptr)});
  // Span 4, still open at the end (DrainOpen): not counted.
  writer->AddSpan(SpanInterval{7, t0 + 50 * ms, t0 + 55 * ms, context_of(4, "/d", nullptr)});
  SpanInterval open_at_end{7, t0 + 55 * ms, t0 + 60 * ms, context_of(4, "/d", "acme")};
  open_at_end.closed = false;
  writer->AddSpan(open_at_end);
  ASSERT_TRUE(IsOk(scene.Close(t0 + 70 * ms)));

  JfrReader reader;
  ASSERT_TRUE(IsOk(reader.Read(scene.config.path, {})));
  std::map<std::string, LatencyHistogram> histograms;  // by "endpoint/tenant"
  for (const JfrEvent& event : reader.events()) {
    if (event.type_name() != "ctxprof.SpanLatency") continue;
    LatencyHistogram histogram;
    ASSERT_TRUE(histogram.AddBucketDeltasText(event.Field("bucketDeltas").string()));
    const JfrValue& tenant = event.Field("tenant");
    histograms[event.Field("endpoint").string() + "/" + (tenant.is_null() ? "" : tenant.string())]
        .Merge(histogram);
  }
  ASSERT_EQ(histograms.size(), 3u);
  EXPECT_EQ(histograms["/a/acme"].counts(),
            (std::map<int64_t, int64_t>{{LatencyHistogram::FloorOf(12000000), 1}}));
  EXPECT_EQ(histograms["/b/"].counts(),
            (std::map<int64_t, int64_t>{{LatencyHistogram::FloorOf(5000000), 1},
                                        {LatencyHistogram::FloorOf(10000000), 1}}));
  EXPECT_EQ(histograms["/c/"].counts(),
            (std::map<int64_t, int64_t>{{LatencyHistogram::FloorOf(5000000), 1}}));
}

// A record that reaches the writer before its span is drained triggers the span when it arrives
// (SpanIntervals::Add); at a chunk end before the span is settled, the span is cut just after
// that record, not at tick 1 (a cut from a last record
// never set: an interval of negative duration, then one of hours).
TEST(SpanLatencyTest, ASpanDrainedAfterItsRecordIsCutJustAfterItAtAChunkEnd) {
  SpanScene scene(3, "/late");
  const uint64_t t0 = scene.t0, ms = scene.ms;
  scene.workload.samples = {scene.CpuAt(t0 + 5 * ms)};
  ASSERT_TRUE(IsOk(scene.Open(TempPath("span_late.jfr"), false)));
  ASSERT_TRUE(IsOk(scene.AddSample(0)));
  // Drained after its record.
  scene.writer->AddSpan(SpanInterval{SpanScene::kTid, t0, t0 + 30 * ms, scene.context});
  ASSERT_TRUE(IsOk(scene.writer->Rotate()));
  ASSERT_TRUE(IsOk(scene.Close(t0 + 40 * ms)));

  JfrReader reader;
  ASSERT_TRUE(IsOk(reader.Read(scene.config.path, {})));
  // Just after the record, as every reader converts ticks (JfrChunkWriter::TicksJustAfter).
  EXPECT_EQ(ContextIntervals(reader), scene.CutParts(reader, t0 + 5 * ms, t0 + 30 * ms));
  // The reader joins the parts back into the span's whole length.
  int64_t span_nanos = 0;
  ASSERT_NE(reader.ContextAt(SpanScene::kTid, static_cast<int64_t>(t0 + 5 * ms), &span_nanos),
            nullptr);
  EXPECT_EQ(span_nanos, 30000000);
}

// A recording on another clock concatenated with ours (the JDK's recorder counts nanosecond
// ticks, ctxprof the TSC): its events join our spans through each chunk's epoch time, and convert
// to epoch nanoseconds with their own chunk's header.
TEST(SpanLatencyTest, EventsOfAChunkOnAnotherClockJoinThroughEpochTime) {
  FakeClock tsc;                                  // 2.4 GHz
  FakeClock nanos(1000000000ULL, 5000000000ULL);  // ns ticks, the same epoch anchor
  FakeFrameResolver frames;
  FakeThreadResolver threads;
  const uint64_t ms = tsc.TicksPerSecond() / 1000;
  const uint64_t t0 = tsc.Now() + ms;
  std::string error;
  Workload ours;
  ours.dictionary = Dictionary::Create(Dictionary::Options{}, &error);
  ASSERT_TRUE(ours.attributes->Register({"endpoint"}, &error)) << error;
  ContextSnapshot context{};
  context.span_id = 4;
  context.attributes[0] = ours.dictionary->Intern("/io");
  JfrWriterConfig config;
  config.path = TempPath("span_clock_ours.jfr");
  config.engine = "perf_cpu_clock";
  config.all_contexts = true;
  StatusOr<std::unique_ptr<JfrWriter>> opened =
      JfrWriter::Open(config, ours.Inputs(&tsc, &frames, &threads));
  ASSERT_TRUE(IsOk(opened));
  opened.value()->AddTimedThreads({7});
  opened.value()->AddSpan(SpanInterval{7, t0, t0 + 30 * ms, context});
  opened.value()->SettleSpans(UINT64_MAX);
  tsc.Set(t0 + 50 * ms);
  ASSERT_TRUE(IsOk(opened.value()->Close()));

  // The other recording: samples of thread 7 at our t0 + 10 ms and t0 + 40 ms, no context.
  Workload theirs;
  theirs.dictionary = Dictionary::Create(Dictionary::Options{}, &error);
  ASSERT_TRUE(theirs.attributes->Register({"endpoint"}, &error)) << error;
  theirs.stacks = {{RawFrame{42, 3, FrameKind::kJavaJit}}};
  theirs.stack_truncated = {false};
  const uint64_t n0 = 5000000000ULL + (t0 - tsc.AnchorTicks()) * 1000 / 2400;  // t0 in ns ticks
  theirs.samples = {{SampleKind::kCpu, 7, n0 + 10000000, 0, -1, {}},
                    {SampleKind::kCpu, 7, n0 + 40000000, 0, -1, {}}};
  config.path = TempPath("span_clock_theirs.jfr");
  opened = JfrWriter::Open(config, theirs.Inputs(&nanos, &frames, &threads));
  ASSERT_TRUE(IsOk(opened));
  SampleRecord record;
  for (size_t i = 0; i < theirs.samples.size(); i++) {
    theirs.Fill(i, &record);
    nanos.Set(record.ticks);
    ASSERT_TRUE(IsOk(opened.value()->Add(record)));
  }
  nanos.Set(n0 + 60000000);
  ASSERT_TRUE(IsOk(opened.value()->Close()));

  std::vector<uint8_t> both = ReadBytes(TempPath("span_clock_ours.jfr"));
  const std::vector<uint8_t> second = ReadBytes(config.path);
  both.insert(both.end(), second.begin(), second.end());
  JfrReader reader;
  ASSERT_TRUE(IsOk(reader.Parse("both", both, {})));
  std::vector<std::string> joined;
  for (const JfrEvent& event : reader.events()) {
    if (event.type_name() != "jdk.ExecutionSample") continue;
    EXPECT_EQ(
        reader.EpochNanosOf(event.start_ticks(), event.chunk),
        reader.EpochNanosOf(static_cast<int64_t>(t0), 0) + (joined.empty() ? 10000000 : 40000000));
    int64_t span_nanos = 0;
    const JfrEvent* found = reader.ContextAt(7, event.start_ticks(), &span_nanos, event.chunk);
    joined.push_back(found == nullptr
                         ? "-"
                         : found->Field("endpoint").string() + " " + std::to_string(span_nanos));
  }
  EXPECT_EQ(joined, (std::vector<std::string>{"/io 30000000", "-"}));
}

// A span still open at a flush is cut there, and its rest is written when it closes even with
// nothing recorded in the rest (contexts=triggered): the parts abut and add up to its length,
// which the reader joins back.
TEST(SpanLatencyTest, TheRestOfASpanCutOpenIsWrittenWhenItCloses) {
  SpanScene scene(6, "/slow");
  const uint64_t t0 = scene.t0, ms = scene.ms;
  scene.workload.samples = {scene.CpuAt(t0 + 5 * ms)};
  ASSERT_TRUE(IsOk(scene.Open(TempPath("span_rest.jfr"), false)));
  // Open since t0, as read at t0 + 10 ms.
  scene.writer->SetOpenSpan(SpanScene::kTid, 0, t0, t0 + 10 * ms, scene.context);
  ASSERT_TRUE(IsOk(scene.AddSample(0)));
  ASSERT_TRUE(IsOk(scene.writer->Flush()));  // cuts the span after its record
  // Closes, nothing more inside.
  scene.writer->AddSpan(SpanInterval{SpanScene::kTid, t0, t0 + 200 * ms, scene.context});
  ASSERT_TRUE(IsOk(scene.Close(t0 + 300 * ms)));

  JfrReader reader;
  ASSERT_TRUE(IsOk(reader.Read(scene.config.path, {})));
  EXPECT_EQ(ContextIntervals(reader), scene.CutParts(reader, t0 + 5 * ms, t0 + 200 * ms));
  int64_t span_nanos = 0;
  ASSERT_NE(reader.ContextAt(SpanScene::kTid, static_cast<int64_t>(t0 + 5 * ms), &span_nanos),
            nullptr);
  EXPECT_EQ(span_nanos, 200000000);
}

// The reader's span length: the intervals of one thread with one span id are one span, even with
// a gap between them (a one-tick interval of a stale context may sit there) and when its
// attributes changed in between; intervals of a context without ids are one span only when they
// abut.
TEST(SpanLatencyTest, TheReaderJoinsASpansPartsByIdsOrByAbutting) {
  SpanScene scene(8, "/a");
  const uint64_t t0 = scene.t0, ms = scene.ms;
  const ContextSnapshot with_id = scene.context;
  ContextSnapshot without_id{};
  without_id.attributes[0] = scene.workload.dictionary->Intern("/b");
  scene.config.all_contexts = true;
  ASSERT_TRUE(IsOk(scene.Open(TempPath("span_parts.jfr"), false)));
  JfrWriter* writer = scene.writer.get();
  writer->AddTimedThreads({9, 11, 13});
  // Thread 7: /a in two parts a tick apart. Thread 9: /b likewise. Thread 11: /b abutting.
  // Thread 13: span 8 without an endpoint, then with /a.
  ContextSnapshot unset = with_id;
  unset.attributes[0] = 0;
  writer->AddSpan(SpanInterval{13, t0, t0 + 10 * ms, unset});
  writer->AddSpan(SpanInterval{13, t0 + 10 * ms, t0 + 30 * ms, with_id});
  for (int32_t tid : {7, 9, 11}) {
    const ContextSnapshot& context = tid == 7 ? with_id : without_id;
    const uint64_t gap = tid == 11 ? 0 : 1;
    writer->AddSpan(SpanInterval{tid, t0, t0 + 10 * ms, context});
    writer->AddSpan(SpanInterval{tid, t0 + 10 * ms + gap, t0 + 30 * ms, context});
  }
  ASSERT_TRUE(IsOk(scene.Close(t0 + 40 * ms)));

  JfrReader reader;
  ASSERT_TRUE(IsOk(reader.Read(scene.config.path, {})));
  auto length_at = [&reader, t0, ms](int64_t tid) {
    int64_t span_nanos = -1;
    reader.ContextAt(tid, static_cast<int64_t>(t0 + 5 * ms), &span_nanos);
    return span_nanos;
  };
  EXPECT_EQ(length_at(7), 30000000);
  EXPECT_EQ(length_at(9), 10000000);
  EXPECT_EQ(length_at(11), 30000000);
  EXPECT_EQ(length_at(13), 30000000);
}

}  // namespace
}  // namespace ctxprof
