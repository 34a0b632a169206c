// The C API's contract: return codes, messages that name the input, serialisation of
// start/stop, the collapsed-stack dump format and the JFR dump.
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "context/process_context.h"
#include "profiler/ctxprof.h"
#include "profiler/jfr/jfr_reader.h"
#include "profiler/profiler.h"
#include "tests/support/session_test_util.h"
#include "tests/support/status_testing.h"

namespace ctxprof {
namespace {

std::atomic<uint64_t> g_sink{0};

__attribute__((noinline)) void DumpedWork(uint64_t cpu_nanos) {
  const uint64_t end = testing::ThreadCpuNanos() + cpu_nanos;
  uint64_t value = 5;
  while (testing::ThreadCpuNanos() < end) value = testing::Spin(100000, value);
  g_sink += value;
}

TEST(ApiTest, BadOptionsAreRejectedWithTheKeyAndTheProcessKeepsRunning) {
  char error[512];
  EXPECT_EQ(ctxprof_start("interval=0ms", error, sizeof(error)), CTXPROF_EINVAL);
  EXPECT_NE(std::string(error).find("'interval'"), std::string::npos) << error;
  EXPECT_EQ(ctxprof_start("colour=blue", error, sizeof(error)), CTXPROF_EINVAL);
  EXPECT_NE(std::string(error).find("'colour'"), std::string::npos) << error;
  EXPECT_EQ(ctxprof_start("attributes=bad name", error, sizeof(error)), CTXPROF_EINVAL);
  EXPECT_NE(std::string(error).find("'attributes'"), std::string::npos) << error;
  // Runtime events need a JVM: a native program is told so, naming the option.
  const std::string file = std::string(getenv("TEST_TMPDIR")) + "/native-events.jfr";
  for (const char* option : {"alloc=512k", "lock=10ms"}) {
    EXPECT_EQ(ctxprof_start((std::string(option) + ",file=" + file).c_str(), error, sizeof(error)),
              CTXPROF_EINVAL);
    const std::string key = std::string(option).substr(0, std::string(option).find('='));
    EXPECT_NE(std::string(error).find("'" + key + "'"), std::string::npos) << error;
    EXPECT_NE(std::string(error).find("JVM"), std::string::npos) << error;
  }
  // Truncation keeps the buffer NUL-terminated.
  char tiny[8];
  EXPECT_EQ(ctxprof_start("colour=blue", tiny, sizeof(tiny)), CTXPROF_EINVAL);
  EXPECT_EQ(std::string(tiny).size(), 7u);
  EXPECT_FALSE(Profiler::Global()->Stats().running);
}

TEST(ApiTest, StartStopAreSerialisedWithClearErrors) {
  EXPECT_EQ(ctxprof_stop(), CTXPROF_ESTATE);
  char error[512];
  ASSERT_EQ(ctxprof_start("event=cpu,interval=5ms", error, sizeof(error)), 0) << error;
  EXPECT_EQ(ctxprof_start("event=cpu", error, sizeof(error)), CTXPROF_ESTATE);
  EXPECT_NE(std::string(error).find("already running"), std::string::npos) << error;
  const char* names[] = {"tenant"};
  EXPECT_EQ(ctxprof_register_attributes(names, 1), CTXPROF_ESTATE);
  EXPECT_EQ(ctxprof_stop(), 0);
  EXPECT_EQ(ctxprof_stop(), CTXPROF_ESTATE);
}

TEST(ApiTest, AttributeArgumentsAreValidated) {
  const char* names[] = {"endpoint", "tenant"};
  ASSERT_EQ(ctxprof_register_attributes(names, 2), 0);
  EXPECT_EQ(ctxprof_set_attribute(1, "acme"), 0);
  EXPECT_EQ(ctxprof_set_attribute(2, "x"), CTXPROF_EINVAL);  // not registered
  EXPECT_EQ(ctxprof_set_attribute(-1, "x"), CTXPROF_EINVAL);
  EXPECT_EQ(ctxprof_set_attribute(0, nullptr), 0);  // clears
  const char* bad[] = {"no spaces allowed"};
  EXPECT_EQ(ctxprof_register_attributes(bad, 1), CTXPROF_EINVAL);
  EXPECT_EQ(ctxprof_register_attributes(nullptr, 1), CTXPROF_EINVAL);
  ctxprof_clear_context();
}

TEST(ApiTest, SlotsNeverMoveOnceBound) {
  const char* names[] = {"endpoint", "tenant"};
  ASSERT_EQ(ctxprof_register_attributes(names, 2), 0);
  ASSERT_EQ(ctxprof_register_attributes(names, 1), 0) << "a prefix of the bound names is fine";
  const char* swapped[] = {"tenant", "endpoint"};
  EXPECT_EQ(ctxprof_register_attributes(swapped, 2), CTXPROF_EINVAL);
  const Status refused = Profiler::Global()->RegisterAttributes({"tenant"});
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("slot 0 is already bound to 'endpoint', not 'tenant'"),
            std::string::npos)
      << refused.message();
}

// The Java API registers names in the store itself, at any time (a tracer's ContextSetter while
// an agent's session runs): such a name is reported once, as the recording has it only from its
// next chunk on.
TEST(ApiTest, AnAttributeRegisteredWhileASessionRunsIsReportedOnce) {
  char error[512];
  ASSERT_EQ(ctxprof_start("event=ctimer,interval=10ms,signal=SIGRTMIN+3", error, sizeof(error)), 0)
      << error;
  std::string store_error;
  ProcessContext* store = ProcessContext::Get(&store_error);
  ASSERT_NE(store, nullptr) << store_error;
  std::vector<std::string> names = store->attributes().names();
  ::testing::internal::CaptureStderr();
  Profiler::Global()->ReportUnrecordedAttributes();
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "") << "every name was there at the start";
  names.push_back("registered_late");
  ASSERT_TRUE(store->attributes().Register(names, &store_error)) << store_error;
  ::testing::internal::CaptureStderr();
  Profiler::Global()->ReportUnrecordedAttributes();
  Profiler::Global()->ReportUnrecordedAttributes();
  const std::string reported = ::testing::internal::GetCapturedStderr();
  const std::string slot = std::to_string(names.size() - 1);
  EXPECT_EQ(reported,
            "ctxprof: attribute 'registered_late' was registered after the running session "
            "started: its recording has it from its next chunk on, and a collapsed dump names it "
            "slot" +
                slot +
                "; list it in the start option attributes= (e.g. "
                "attributes=registered_late) to have it from the start\n");
  EXPECT_EQ(ctxprof_stop(), 0);
}

void IgnoreSignal(int) {}

TEST(ApiTest, ForeignSignalHandlerIsRefused) {
  struct sigaction action = {};
  action.sa_handler = IgnoreSignal;
  ASSERT_EQ(sigaction(SIGUSR2, &action, nullptr), 0);
  char error[512];
  EXPECT_EQ(ctxprof_start("signal=SIGUSR2", error, sizeof(error)), CTXPROF_EUNAVAIL);
  EXPECT_NE(std::string(error).find("signal " + std::to_string(SIGUSR2)), std::string::npos)
      << error;
  EXPECT_NE(std::string(error).find("already has a handler"), std::string::npos) << error;
  EXPECT_FALSE(Profiler::Global()->Stats().running);
}

TEST(ApiTest, DumpWritesCollapsedStacksWithContext) {
  const char* names[] = {"endpoint"};
  ASSERT_EQ(ctxprof_register_attributes(names, 1), 0);
  char error[512];
  ASSERT_EQ(ctxprof_start("event=ctimer,interval=10ms,signal=SIGRTMIN+3", error, sizeof(error)), 0)
      << error;
  ctxprof_set_trace_context(0x1, 0x2, 0x3);
  ASSERT_EQ(ctxprof_set_attribute(0, "/pay;ment"), 0);  // ';' must not split the line
  DumpedWork(300 * 1000 * 1000);
  ctxprof_clear_context();
  ASSERT_EQ(ctxprof_stop(), 0);
  const std::string path = std::string(getenv("TEST_TMPDIR")) + "/profile.collapsed";
  ASSERT_EQ(ctxprof_dump(path.c_str()), 0);
  std::ifstream in(path);
  std::string line;
  int matching = 0;
  while (std::getline(in, line)) {
    const size_t space = line.rfind(' ');
    ASSERT_NE(space, std::string::npos) << line;
    EXPECT_GT(std::stoull(line.substr(space + 1)), 0u) << line;
    if (line.find("DumpedWork") == std::string::npos) continue;
    ++matching;
    EXPECT_EQ(line.rfind("[cpu];[running];[trace=00000000000000010000000000000002];"
                         "[span=0000000000000003];[endpoint=/pay_ment];",
                         0),
              0u)
        << line;
  }
  EXPECT_GT(matching, 0);
  EXPECT_EQ(ctxprof_dump("/nonexistent-dir/x"), CTXPROF_EIO);
}

// CPU samples in a recording read with the strict reader, and whether its last chunk is final.
struct DumpedRecording {
  size_t samples = 0;
  size_t in_dumped_work = 0;
  bool final = false;
};

DumpedRecording ReadDump(const std::string& path) {
  DumpedRecording result;
  JfrReader reader;
  EXPECT_TRUE(IsOk(reader.Read(path, {})));  // every chunk finished
  if (reader.chunks().empty()) return result;
  result.final = (reader.chunks().back().flags & kChunkFlagFinal) != 0;
  for (const JfrEvent& event : reader.events()) {
    if (event.type_name() != "jdk.ExecutionSample") continue;
    result.samples++;
    for (const JfrFrame& frame : JfrReader::FramesOf(event.Field("stackTrace"))) {
      if (frame.method_name.find("DumpedWork") != std::string::npos) {
        result.in_dumped_work++;
        break;
      }
    }
  }
  return result;
}

// A dump to any name but .txt/.collapsed is JFR: a finished copy of the session's recording so
// far while it goes on, or without a recording the aggregated samples.
TEST(ApiTest, DumpWritesJfrWhileTheRecordingGoesOn) {
  const std::string dir = getenv("TEST_TMPDIR");
  char error[512];
  for (const bool with_file : {true, false}) {
    std::string options = "event=ctimer,interval=10ms,signal=SIGRTMIN+3";
    if (with_file) options += ",file=" + dir + "/recording.jfr";
    ASSERT_EQ(ctxprof_start(options.c_str(), error, sizeof(error)), 0) << error;
    DumpedWork(300 * 1000 * 1000);
    const std::string dump = dir + (with_file ? "/dump.jfr" : "/memory.jfr");
    ASSERT_EQ(ctxprof_dump(dump.c_str()), 0);
    const DumpedRecording dumped = ReadDump(dump);
    EXPECT_GT(dumped.in_dumped_work, 0u) << dump;
    EXPECT_TRUE(dumped.final) << dump << ": a dump is a finished recording";
    DumpedWork(100 * 1000 * 1000);
    ASSERT_EQ(ctxprof_stop(), 0);
    if (with_file) {
      const DumpedRecording recording = ReadDump(dir + "/recording.jfr");
      EXPECT_GE(recording.samples, dumped.samples) << "the recording went on after the dump";
      // After stop: the aggregated samples.
      ASSERT_EQ(ctxprof_dump((dir + "/after-stop.jfr").c_str()), 0);
      EXPECT_GT(ReadDump(dir + "/after-stop.jfr").in_dumped_work, 0u);
    }
  }
}

}  // namespace
}  // namespace ctxprof
