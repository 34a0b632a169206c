// The ctxprof tool's analysis on the hand-checkable recording of tools_workload.h: the context
// join, the collapsed stacks and the report, each compared with values derived by hand from the
// table there (not from the tool's output); and the flame page's data escaping.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "profiler/export/profile.h"
#include "profiler/jfr/jfr_reader.h"
#include "tests/jfr/synthetic.h"
#include "tests/tools/tools_workload.h"
#include "tools/collapsed.h"
#include "tools/flame.h"
#include "tools/report.h"

namespace ctxprof::tools {
namespace {

// Writes the tools workload (jdk.ExecutionSample or ctxprof.CpuSample for CPU samples).
std::string WriteRecording(CpuSampleEvent cpu_samples, const std::string& name) {
  const std::string path = std::string(getenv("TEST_TMPDIR")) + "/" + name;
  FakeClock clock;
  const uint64_t spacing = clock.TicksPerSecond() / 1000;
  Workload workload = MakeToolsWorkload(clock.Now() + spacing, spacing);
  JfrWriterConfig config;
  config.path = path;
  config.cpu_samples = cpu_samples;
  config.engine = "perf_cpu_clock";
  config.interval_nanos = 10000000;
  const Status written = WriteWorkload(workload, &clock, spacing, config, nullptr);
  EXPECT_TRUE(written.ok()) << written.message();
  return path;
}

class ToolsTest : public ::testing::TestWithParam<CpuSampleEvent> {
 protected:
  void SetUp() override {
    path_ = WriteRecording(GetParam(), GetParam() == CpuSampleEvent::kJdk ? "jdk.jfr" : "ctx.jfr");
  }
  Profile Load(EventSelection selection) {
    Profile profile;
    std::string error;
    EXPECT_TRUE(profile.Load(path_, selection, &error)) << error;
    return profile;
  }
  std::string path_;
};

TEST_P(ToolsTest, JoinsEverySampleToItsContext) {
  Profile profile = Load(EventSelection::kAll);
  ASSERT_EQ(profile.attribute_names(), (std::vector<std::string>{"endpoint", "tenant"}));
  EXPECT_EQ(profile.AttributeIndex("tenant"), 1);
  EXPECT_EQ(profile.AttributeIndex("nope"), -1);
  EXPECT_EQ(profile.cpu_interval_nanos(), 10000000);
  ASSERT_EQ(profile.samples().size(), 12u);
  // Columns of the table in tools_workload.h.
  const char* endpoints[] = {"/checkout", "/checkout", "/checkout", "/search",
                             "/search",   "/search",   "/checkout", "",
                             "",          "",          "/checkout", "/search"};
  const char* tenants[] = {"acme",   "acme", "acme", "acme", "acme",   "a b;c=[x]%",
                           "globex", "",     "",     "acme", "globex", "acme"};
  const int64_t tids[] = {101, 101, 101, 102, 102, 102, 101, 101, 102, 102, 101, 102};
  const bool wall[] = {false, false, true,  false, false, true,
                       false, false, false, true,  true,  false};
  const int contexts[] = {0, 0, 0, 2, 2, 3, 1, -1, -1, 4, 1, 2};
  for (size_t i = 0; i < 12; i++) {
    const Sample& sample = profile.samples()[i];
    SCOPED_TRACE("sample " + std::to_string(i + 1));
    EXPECT_EQ(sample.thread_id, tids[i]);
    EXPECT_EQ(sample.kind, wall[i] ? SampleKind::kWall : SampleKind::kCpu);
    EXPECT_EQ(sample.weight, 1);
    EXPECT_EQ(profile.ValueOf(sample, 0), endpoints[i]);
    EXPECT_EQ(profile.ValueOf(sample, 1), tenants[i]);
    EXPECT_EQ(sample.context < 0, contexts[i] < 0);
    if (sample.context >= 0) {
      char trace[33], span[17];
      snprintf(trace, sizeof(trace), "%016x%016x", 0x1000 + contexts[i], 0x2000 + contexts[i]);
      snprintf(span, sizeof(span), "%016x", 0x3000 + contexts[i]);
      EXPECT_EQ(profile.contexts()[sample.context].trace_id, trace);
      EXPECT_EQ(profile.contexts()[sample.context].span_id, span);
    }
  }
  // Samples 1, 2 share a context value set; 7 and 11 another: 5 distinct contexts.
  EXPECT_EQ(profile.contexts().size(), 5u);
  EXPECT_EQ(profile.stacks().size(), 6u);
  EXPECT_EQ(Load(EventSelection::kCpu).samples().size(), 8u);
  EXPECT_EQ(Load(EventSelection::kWall).samples().size(), 4u);
}

TEST_P(ToolsTest, CollapsedStacksAreExactlyTheHandDerivedLines) {
  const std::string h = "com.example.svc.Handler";
  const std::string checkout = "[endpoint=/checkout];";
  const std::string search = "[endpoint=/search];";
  const std::string expected =
      checkout + "[tenant=acme];" + h + "1.method1;" + h + "2.method2;" + h + "4.method4 2\n" +
      checkout + "[tenant=acme];" + h + "1.method1;" + h + "2.method2;" + h + "5.method5 1\n" +
      checkout + "[tenant=globex];" + h + "1.method1;" + h + "2.method2;" + h + "4.method4 1\n" +
      checkout + "[tenant=globex];" + h + "1.method1;" + h + "2.method2;" + h + "5.method5 1\n" +
      search + "[tenant=a%20b%3Bc%3D%5Bx%5D%25];" + h + "1.method1;" + h + "3.method3;" + h +
      "6.method6 1\n" + search + "[tenant=acme];" + h + "1.method1;" + h + "3.method3;" + h +
      "1.method8;libfake.so.native_function_3 1\n" + search + "[tenant=acme];" + h + "1.method1;" +
      h + "3.method3;" + h + "6.method6 2\n" + "[no frames] 1\n" + "[tenant=acme];" + h +
      "1.method1;" + h + "3.method3;" + h + "1.method8;libfake.so.native_function_3 1\n" + h +
      "1.method1;" + h + "1.größe_22 1\n";
  std::string collapsed;
  WriteCollapsed(Load(EventSelection::kAll), &collapsed);
  EXPECT_EQ(collapsed, expected);

  // CPU only: samples 1, 2, 4, 5, 7, 8, 9, 12.
  const std::string expected_cpu =
      checkout + "[tenant=acme];" + h + "1.method1;" + h + "2.method2;" + h + "4.method4 2\n" +
      checkout + "[tenant=globex];" + h + "1.method1;" + h + "2.method2;" + h + "5.method5 1\n" +
      search + "[tenant=acme];" + h + "1.method1;" + h + "3.method3;" + h +
      "1.method8;libfake.so.native_function_3 1\n" + search + "[tenant=acme];" + h + "1.method1;" +
      h + "3.method3;" + h + "6.method6 2\n" + "[no frames] 1\n" + h + "1.method1;" + h +
      "1.größe_22 1\n";
  collapsed.clear();
  WriteCollapsed(Load(EventSelection::kCpu), &collapsed);
  EXPECT_EQ(collapsed, expected_cpu);
}

// A report row; amounts are 10 characters wide for samples, 12 for bytes and time.
std::string Row(const char* self, const char* self_share, const char* self_all, const char* total,
                const char* total_share, const char* total_all, const std::string& method,
                int width = 10) {
  char line[256];
  snprintf(line, sizeof(line), "%*s %8s %8s %*s %8s %8s  %s\n", width, self, self_share, self_all,
           width, total, total_share, total_all, method.c_str());
  return line;
}

TEST_P(ToolsTest, ReportIsTheHandDerivedTable) {
  const std::string h = "com.example.svc.Handler";
  const std::string header = Row("self", "self%", "all%", "total", "total%", "all%", "method");
  const std::string expected =
      "samples: 12 (cpu 8, wall 4)\nby: endpoint\n"
      "\n== endpoint = \"/checkout\": 5 samples (41.67% of all)\n" +
      header + Row("3", "60.00%", "25.00%", "3", "60.00%", "25.00%", h + "4.method4") +
      Row("2", "40.00%", "16.67%", "2", "40.00%", "16.67%", h + "5.method5") +
      Row("0", "0.00%", "0.00%", "5", "100.00%", "41.67%", h + "1.method1") +
      Row("0", "0.00%", "0.00%", "5", "100.00%", "41.67%", h + "2.method2") +
      "\n== endpoint = \"/search\": 4 samples (33.33% of all)\n" + header +
      Row("3", "75.00%", "25.00%", "3", "75.00%", "25.00%", h + "6.method6") +
      Row("1", "25.00%", "8.33%", "1", "25.00%", "8.33%", "libfake.so.native_function_3") +
      Row("0", "0.00%", "0.00%", "4", "100.00%", "33.33%", h + "1.method1") +
      Row("0", "0.00%", "0.00%", "4", "100.00%", "33.33%", h + "3.method3") +
      Row("0", "0.00%", "0.00%", "1", "25.00%", "8.33%", h + "1.method8") +
      "\n== endpoint (unset): 1 samples (8.33% of all)\n" + header +
      Row("1", "100.00%", "8.33%", "1", "100.00%", "8.33%", "libfake.so.native_function_3") +
      Row("0", "0.00%", "0.00%", "1", "100.00%", "8.33%", h + "1.method1") +
      Row("0", "0.00%", "0.00%", "1", "100.00%", "8.33%", h + "1.method8") +
      Row("0", "0.00%", "0.00%", "1", "100.00%", "8.33%", h + "3.method3") +
      "\n== (no context): 2 samples (16.67% of all)\n" + header +
      Row("1", "50.00%", "8.33%", "1", "50.00%", "8.33%", h + "1.größe_22") +
      Row("0", "0.00%", "0.00%", "1", "50.00%", "8.33%", h + "1.method1");
  Profile profile = Load(EventSelection::kAll);
  std::string report;
  WriteReport(profile, ReportOptions{profile.AttributeIndex("endpoint"), 10}, &report);
  EXPECT_EQ(report, expected);

  // --top 1 --by tenant: acme has samples 1-5, 10, 12 (7), globex 7, 11, the odd value 6.
  report.clear();
  WriteReport(profile, ReportOptions{1, 1}, &report);
  const std::string expected_tenant =
      "samples: 12 (cpu 8, wall 4)\nby: tenant\n"
      "\n== tenant = \"acme\": 7 samples (58.33% of all)\n" +
      header + Row("2", "28.57%", "16.67%", "2", "28.57%", "16.67%", h + "4.method4") +
      "\n== tenant = \"globex\": 2 samples (16.67% of all)\n" + header +
      Row("1", "50.00%", "8.33%", "1", "50.00%", "8.33%", h + "4.method4") +
      "\n== tenant = \"a b;c=[x]%\": 1 samples (8.33% of all)\n" + header +
      Row("1", "100.00%", "8.33%", "1", "100.00%", "8.33%", h + "6.method6") +
      "\n== (no context): 2 samples (16.67% of all)\n" + header +
      Row("1", "50.00%", "8.33%", "1", "50.00%", "8.33%", h + "1.größe_22");
  EXPECT_EQ(report, expected_tenant);
}

// --threads: thread 101 (a Java thread, worker-101) has samples 1, 2, 3, 7, 8, 11; thread 102
// (native-102) 4, 5, 6, 9, 10, 12. Equal totals: the thread seen first comes first.
TEST_P(ToolsTest, ReportsPerThread) {
  const std::string h = "com.example.svc.Handler";
  const std::string header = Row("self", "self%", "all%", "total", "total%", "all%", "method");
  Profile profile = Load(EventSelection::kAll);
  std::string report;
  WriteReport(profile, ReportOptions{0, 1, /*by_thread=*/true}, &report);
  EXPECT_EQ(report,
            "samples: 12 (cpu 8, wall 4)\nby: thread\n"
            "\n== thread \"worker-101\" tid=101: 6 samples (50.00% of all)\n" +
                header + Row("3", "50.00%", "25.00%", "3", "50.00%", "25.00%", h + "4.method4") +
                "\n== thread \"native-102\" tid=102: 6 samples (50.00% of all)\n" + header +
                Row("3", "50.00%", "25.00%", "3", "50.00%", "25.00%", h + "6.method6"));
}

INSTANTIATE_TEST_SUITE_P(CpuEvents, ToolsTest,
                         ::testing::Values(CpuSampleEvent::kJdk, CpuSampleEvent::kCtxprof));

// The runtime events of MakeToolsEventWorkload (its table in tools_workload.h), in the default
// layout (a 2.4 GHz clock) and in upload='s (JfrWriterConfig::pyroscope: ticks in nanoseconds,
// contextIds, allocations as jdk.ObjectAllocationInNewTLAB): the same profile.
class EventToolsTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    const bool upload_layout = GetParam();
    path_ = std::string(getenv("TEST_TMPDIR")) + (upload_layout ? "/upload.jfr" : "/events.jfr");
    FakeClock clock(upload_layout ? kNanosPerSecond : FakeClock().TicksPerSecond());
    ticks_per_second_ = clock.TicksPerSecond();
    const uint64_t spacing = ticks_per_second_ / 100;  // 10 ms
    first_ticks_ = clock.Now() + spacing;
    Workload workload = MakeToolsEventWorkload(first_ticks_, spacing, ticks_per_second_);
    JfrWriterConfig config;
    config.path = path_;
    config.engine = "perf_cpu_clock";
    config.interval_nanos = 10000000;
    config.context_id = upload_layout;
    config.pyroscope = upload_layout;
    const Status written = WriteWorkload(workload, &clock, spacing, config, nullptr);
    ASSERT_TRUE(written.ok()) << written.message();
  }
  Profile Load(EventSelection selection) {
    Profile profile;
    std::string error;
    EXPECT_TRUE(profile.Load(path_, selection, &error)) << error;
    return profile;
  }
  // The names of a sample's frames, leaf first.
  static std::vector<std::string> Frames(const Profile& profile, const Sample& sample) {
    std::vector<std::string> names;
    for (uint32_t frame : profile.stacks()[sample.stack]) {
      names.push_back(profile.frames()[frame].Name());
    }
    return names;
  }
  std::string path_;
  uint64_t ticks_per_second_ = 0;
  uint64_t first_ticks_ = 0;
};

TEST_P(EventToolsTest, AllocationsWeighBytesWithTheClassAsTheLeaf) {
  const Profile profile = Load(EventSelection::kAlloc);
  EXPECT_EQ(profile.unit(), WeightUnit::kBytes);
  ASSERT_EQ(profile.samples().size(), 4u);
  EXPECT_EQ(profile.total_weight(), 11500);
  const int64_t weights[] = {1000, 3000, 500, 7000};
  const char* classes[] = {"byte[]", "java.lang.String", "byte[]", "java.lang.String[]"};
  const char* endpoints[] = {"/checkout", "/checkout", "/search", ""};
  const char* leaves[] = {"com.example.svc.Handler4.method4", "com.example.svc.Handler4.method4",
                          "com.example.svc.Handler6.method6", "com.example.svc.Handler1.größe_22"};
  for (size_t i = 0; i < 4; i++) {
    SCOPED_TRACE("event " + std::to_string(i + 1));
    const Sample& sample = profile.samples()[i];
    EXPECT_EQ(sample.kind, SampleKind::kAllocation);
    EXPECT_EQ(sample.weight, weights[i]);
    EXPECT_EQ(profile.ValueOf(sample, 0), endpoints[i]);
    const std::vector<std::string> frames = Frames(profile, sample);
    ASSERT_GE(frames.size(), 2u);
    EXPECT_EQ(frames[0], classes[i]);
    EXPECT_EQ(profile.frames()[profile.stacks()[sample.stack][0]].type, "Class");
    EXPECT_EQ(frames[1], leaves[i]);
  }
  EXPECT_EQ(profile.samples()[3].context, -1);
  // The CPU sample among the events is a sample, not an allocation.
  ASSERT_EQ(Load(EventSelection::kAll).samples().size(), 1u);
}

TEST_P(EventToolsTest, LockWaitsWeighNanosecondsAndJoinTheirContext) {
  const Profile profile = Load(EventSelection::kLock);
  EXPECT_EQ(profile.unit(), WeightUnit::kNanoseconds);
  ASSERT_EQ(profile.samples().size(), 2u);
  const Sample& monitor = profile.samples()[0];
  const Sample& park = profile.samples()[1];
  EXPECT_EQ(monitor.kind, SampleKind::kMonitorEnter);
  EXPECT_EQ(park.kind, SampleKind::kThreadPark);
  EXPECT_EQ(monitor.weight, 2000000);
  EXPECT_EQ(park.weight, 5000000);
  // Events 4 and 5 end at their ticks; they start 2 and 5 ms earlier.
  const uint64_t spacing = ticks_per_second_ / 100;
  const uint64_t ms = ticks_per_second_ / 1000;
  EXPECT_EQ(monitor.ticks, static_cast<int64_t>(first_ticks_ + 3 * spacing - 2 * ms));
  EXPECT_EQ(park.ticks, static_cast<int64_t>(first_ticks_ + 4 * spacing - 5 * ms));
  EXPECT_EQ(profile.ValueOf(monitor, 0), "/search");
  EXPECT_EQ(profile.ValueOf(monitor, 1), "acme");
  EXPECT_EQ(profile.ValueOf(park, 0), "/checkout");
  EXPECT_EQ(profile.ValueOf(park, 1), "globex");
  EXPECT_EQ(Frames(profile, monitor)[0], "java.lang.Object");
  EXPECT_EQ(Frames(profile, park)[0], "java.util.concurrent.locks.ReentrantLock$NonfairSync");

  std::string collapsed;
  WriteCollapsed(profile, &collapsed);
  const std::string h = "com.example.svc.Handler";
  EXPECT_EQ(collapsed,
            "[endpoint=/checkout];[tenant=globex];" + h + "1.method1;" + h + "2.method2;" + h +
                "5.method5;java.util.concurrent.locks.ReentrantLock$NonfairSync 5000000\n"
                "[endpoint=/search];[tenant=acme];" +
                h + "1.method1;" + h + "3.method3;" + h +
                "1.method8;libfake.so.native_function_3;java.lang.Object 2000000\n");
}

std::string WideRow(const char* self, const char* self_share, const char* self_all,
                    const char* total, const char* total_share, const char* total_all,
                    const std::string& method) {
  return Row(self, self_share, self_all, total, total_share, total_all, method, 12);
}

TEST_P(EventToolsTest, ReportsSayTimeBlockedAndBytesAllocated) {
  const std::string h = "com.example.svc.Handler";
  const std::string header = WideRow("self", "self%", "all%", "total", "total%", "all%", "method");
  std::string report;
  Profile locks = Load(EventSelection::kLock);
  WriteReport(locks, ReportOptions{0, 2}, &report);
  EXPECT_EQ(
      report,
      "blocked: 7.000 ms in 2 events (monitor 1, park 1)\nby: endpoint\n"
      "\n== endpoint = \"/checkout\": 5.000 ms blocked (71.43% of all)\n" +
          header +
          WideRow("5.000 ms", "100.00%", "71.43%", "5.000 ms", "100.00%", "71.43%",
                  "java.util.concurrent.locks.ReentrantLock$NonfairSync") +
          WideRow("0.000 ms", "0.00%", "0.00%", "5.000 ms", "100.00%", "71.43%", h + "1.method1") +
          "\n== endpoint = \"/search\": 2.000 ms blocked (28.57% of all)\n" + header +
          WideRow("2.000 ms", "100.00%", "28.57%", "2.000 ms", "100.00%", "28.57%",
                  "java.lang.Object") +
          WideRow("0.000 ms", "0.00%", "0.00%", "2.000 ms", "100.00%", "28.57%", h + "1.method1"));

  report.clear();
  Profile allocations = Load(EventSelection::kAlloc);
  WriteReport(allocations, ReportOptions{0, 1}, &report);
  EXPECT_EQ(report,
            "allocated: 11.23 KiB in 4 samples\nby: endpoint\n"
            "\n== endpoint = \"/checkout\": 3.91 KiB allocated (34.78% of all)\n" +
                header +
                WideRow("2.93 KiB", "75.00%", "26.09%", "2.93 KiB", "75.00%", "26.09%",
                        "java.lang.String") +
                "\n== endpoint = \"/search\": 500 B allocated (4.35% of all)\n" + header +
                WideRow("500 B", "100.00%", "4.35%", "500 B", "100.00%", "4.35%", "byte[]") +
                "\n== (no context): 6.84 KiB allocated (60.87% of all)\n" + header +
                WideRow("6.84 KiB", "100.00%", "60.87%", "6.84 KiB", "100.00%", "60.87%",
                        "java.lang.String[]"));
}

INSTANTIATE_TEST_SUITE_P(Layouts, EventToolsTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Upload" : "Default";
                         });

// A wait joins the context read at its end, the one its contextId names (and Pyroscope shows):
// its start can lie in the thread's previous interval, which an idle thread's repeat sample,
// dated after the wait began, extends (docs/JFR.md, "Pyroscope").
TEST(WaitJoinTest, AWaitJoinsTheContextOfItsEnd) {
  const std::string path = std::string(getenv("TEST_TMPDIR")) + "/wait_join.jfr";
  FakeClock clock;
  const uint64_t ms = clock.TicksPerSecond() / 1000;
  const uint64_t t = clock.Now() + 10 * ms;
  Workload workload = MakeToolsEventWorkload(t, ms, clock.TicksPerSecond());
  EventFields monitor = workload.samples[3].event;  // java/lang/Object
  monitor.amount = 3 * ms;
  workload.samples = {
      {SampleKind::kWall, 101, t, 0, 0},                            // /checkout acme
      {SampleKind::kWall, 101, t + 3 * ms, 0, 0},                   // the same, a repeat dated late
      {SampleKind::kMonitorEnter, 101, t + 4 * ms, 3, 2, monitor},  // /search, from t + 1 ms
  };
  JfrWriterConfig config;
  config.path = path;
  config.engine = "wall";
  config.interval_nanos = 1000000;
  config.wall_interval_nanos = 1000000;
  config.context_id = true;
  const Status written = WriteWorkload(workload, &clock, ms, config, nullptr);
  ASSERT_TRUE(written.ok()) << written.message();
  std::string error;
  Profile profile;
  ASSERT_TRUE(profile.Load(path, EventSelection::kLock, &error)) << error;
  ASSERT_EQ(profile.samples().size(), 1u);
  EXPECT_EQ(profile.samples()[0].ticks, static_cast<int64_t>(t + 1 * ms));
  EXPECT_EQ(profile.ValueOf(profile.samples()[0], 0), "/search");
  // The start would have joined /checkout: the case this rule is for.
  JfrReader reader;
  const Status read = reader.Read(path, {});
  ASSERT_TRUE(read.ok()) << read.message();
  const JfrEvent* at_start = reader.ContextAt(101, static_cast<int64_t>(t + 1 * ms));
  ASSERT_NE(at_start, nullptr);
  EXPECT_EQ(at_start->Field("endpoint").string(), "/checkout");
}

// What the recording counted as dropped qualifies every result: the tools say it (Notes), once
// for the chunk files of one recording (their counters are totals since its start).
TEST(DropsTest, TheRecordingsDropsAreNotedNotAddedUp) {
  const std::string path = std::string(getenv("TEST_TMPDIR")) + "/drops.jfr";
  FakeClock clock;
  const uint64_t spacing = clock.TicksPerSecond() / 1000;
  JfrWriterConfig config;
  config.path = path;
  config.engine = "perf_cpu_clock";
  config.interval_nanos = 10000000;
  const Status written = WriteWorkload(
      MakeToolsWorkload(clock.Now() + spacing, spacing), &clock, spacing, config,
      [] { return uint64_t{3}; }, [] { return uint64_t{1368370}; });
  ASSERT_TRUE(written.ok()) << written.message();
  Profile profile;
  std::string error;
  ASSERT_TRUE(profile.Load(path, EventSelection::kAll, &error)) << error;
  ASSERT_TRUE(profile.Load(path, EventSelection::kAll, &error)) << error;
  const std::vector<std::string> notes = profile.Notes();
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0].find("the recording dropped 3 samples and events"), 0u) << notes[0];
  EXPECT_EQ(notes[1].find("the recording dropped 1368370 closed spans"), 0u) << notes[1];

  Profile without_drops;
  ASSERT_TRUE(without_drops.Load(WriteRecording(CpuSampleEvent::kJdk, "no_drops.jfr"),
                                 EventSelection::kAll, &error))
      << error;
  EXPECT_TRUE(without_drops.Notes().empty());
}

TEST(JavaClassNameTest, ArraysAndPrimitivesReadLikeJava) {
  EXPECT_EQ(JavaClassName("java/lang/String"), "java.lang.String");
  EXPECT_EQ(JavaClassName("[B"), "byte[]");
  EXPECT_EQ(JavaClassName("[[J"), "long[][]");
  EXPECT_EQ(JavaClassName("[Ljava/util/Map$Entry;"), "java.util.Map$Entry[]");
  EXPECT_EQ(JavaClassName("[X"), "X[]");  // not a JVM type: kept, not guessed
}

TEST(FlameTest, ScriptDataIsAsciiAndCannotCloseTheScriptElement) {
  EXPECT_EQ(JsonStringForScript("a\"b\\c</script>&"),
            "\"a\\\"b\\\\c\\u003c/script\\u003e\\u0026\"");
  EXPECT_EQ(JsonStringForScript("größe"), "\"gr\\u00f6\\u00dfe\"");
  EXPECT_EQ(JsonStringForScript("テ"), "\"\\u30c6\"");
  EXPECT_EQ(JsonStringForScript("\xF0\x9F\x98\x80"), "\"\\ud83d\\ude00\"");  // U+1F600
  EXPECT_EQ(JsonStringForScript("\n\x01"), "\"\\u000a\\u0001\"");
  // Invalid UTF-8: a lone continuation byte, a truncated sequence, an overlong '/'.
  EXPECT_EQ(JsonStringForScript("\x80x\xE3\x83"), "\"\\ufffdx\\ufffd\\ufffd\"");
  EXPECT_EQ(JsonStringForScript("\xC0\xAF"), "\"\\ufffd\\ufffd\"");
}

TEST(FlameTest, PageIsSelfContained) {
  Profile profile;
  std::string error;
  ASSERT_TRUE(
      profile.Load(WriteRecording(CpuSampleEvent::kJdk, "flame.jfr"), EventSelection::kAll, &error))
      << error;
  std::string page;
  WriteFlameGraph(profile, "tenant", "title </script><b>", &page);
  for (const char* remote : {"http:", "https:", "src=", "href=", "@import", "url("}) {
    EXPECT_EQ(page.find(remote), std::string::npos) << remote;
  }
  for (unsigned char c : page) ASSERT_LT(c, 0x80) << "non-ASCII byte in the page";
  EXPECT_EQ(page.find("</script><b>"), std::string::npos);
  EXPECT_NE(page.find("title &lt;/script&gt;&lt;b&gt;"), std::string::npos);
  // Groups: tenant values in byte order, then "(no context)" (every context has a tenant, so
  // there is no "(unset)" group).
  EXPECT_NE(page.find("\"groups\":[\"a b;c=[x]%\",\"acme\",\"globex\",\"(no context)\"]"),
            std::string::npos);
  EXPECT_EQ(page.find("\"base\":"), std::string::npos);

  std::string diff;
  WriteDiffFlameGraph(profile, profile, "tenant", "diff", &diff);
  for (const char* remote : {"http:", "https:", "src=", "href=", "@import", "url("}) {
    EXPECT_EQ(diff.find(remote), std::string::npos) << remote;
  }
  EXPECT_NE(diff.find("\"base\":[["), std::string::npos);
}

}  // namespace
}  // namespace ctxprof::tools
