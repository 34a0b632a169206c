// End to end through the C API: sampling engines -> signal handler -> buffer -> background
// thread -> JFR writer, then the file read back with our JfrReader and with the JDK's `jfr`.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <time.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "profiler/ctxprof.h"
#include "profiler/jfr/jfr_reader.h"
#include "profiler/profiler.h"
#include "tests/support/status_testing.h"

namespace {

std::string TempPath(const std::string& name) {
  return std::string(getenv("TEST_TMPDIR")) + "/" + name;
}

double ThreadCpuSeconds() {
  timespec now;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return now.tv_sec + now.tv_nsec / 1e9;
}

std::atomic<uint64_t> sink;

// The work of each endpoint is in its own function; the one for /search is static (only in
// .symtab), so naming it proves the ELF symbol tables are read.
__attribute__((noinline)) void CheckoutWork(double seconds) {
  const double end = ThreadCpuSeconds() + seconds;
  uint64_t x = 1;
  while (ThreadCpuSeconds() < end) {
    for (int i = 0; i < 20000; i++) x = x * 6364136223846793005ull + 1442695040888963407ull;
  }
  sink += x;
}

__attribute__((noinline)) static void SearchWork(double seconds) {
  const double end = ThreadCpuSeconds() + seconds;
  uint64_t x = 7;
  while (ThreadCpuSeconds() < end) {
    for (int i = 0; i < 20000; i++) x ^= x << 13, x ^= x >> 7, x ^= x << 17;
  }
  sink += x;
}

void Serve(const char* endpoint, uint64_t trace, void (*work)(double)) {
  for (int request = 0; request < 8; request++) {
    ctxprof_set_trace_context(trace, request + 1, trace * 100 + request);
    ASSERT_EQ(ctxprof_set_attribute(0, endpoint), 0);
    work(0.08);
    ctxprof_clear_context();
    work(0.01);  // between requests: no context
  }
}

int RunCommand(const std::string& command, std::string* output) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return -1;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) output->append(buffer, n);
  return pclose(pipe);
}

TEST(RecordingTest, SamplesStacksAndContextsReachTheJfrFile) {
  const char* names[] = {"endpoint"};
  ASSERT_EQ(ctxprof_register_attributes(names, 1), 0);
  const std::string path = TempPath("recording.jfr");
  char error[512];
  ASSERT_EQ(ctxprof_start(("event=cpu,interval=2ms,file=" + path).c_str(), error, sizeof(error)), 0)
      << error;
  std::thread checkout(Serve, "/checkout", 0xC0FFEE, CheckoutWork);
  std::thread search(Serve, "/search", 0x5EA4C4, SearchWork);
  checkout.join();
  search.join();
  ASSERT_EQ(ctxprof_stop(), 0);
  const ctxprof::SessionStats stats = ctxprof::Profiler::Global()->Stats();
  EXPECT_EQ(stats.recording, path);
  EXPECT_EQ(stats.recording_error, "");

  struct stat info;
  ASSERT_EQ(stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u) << "recordings are private to the user";

  ctxprof::JfrReader reader;
  ASSERT_TRUE(IsOk(reader.Read(path, {})));
  int samples = 0, in_work = 0, matched = 0, mismatched = 0, settings = 0;
  for (const ctxprof::JfrEvent& event : reader.events()) {
    if (event.type_name() == "ctxprof.ProfilerSettings") {
      settings++;
      EXPECT_NE(event.Field("engine").string(), "");
    }
    if (event.type_name() != "jdk.ExecutionSample") continue;
    samples++;
    const std::vector<ctxprof::JfrFrame> frames =
        ctxprof::JfrReader::FramesOf(event.Field("stackTrace"));
    std::string work;
    for (const ctxprof::JfrFrame& frame : frames) {
      if (frame.method_name.find("CheckoutWork") != std::string::npos) work = "/checkout";
      if (frame.method_name.find("SearchWork") != std::string::npos) work = "/search";
      if (!work.empty()) break;
    }
    if (work.empty()) continue;
    in_work++;
    const ctxprof::JfrEvent* context =
        reader.ContextAt(event.thread().Field("osThreadId").integer(), event.start_ticks());
    if (context == nullptr) continue;  // between requests
    (context->Field("endpoint").string() == work ? matched : mismatched)++;
  }
  printf("%d samples, %d in the work functions, %d with their endpoint, %d with another\n", samples,
         in_work, matched, mismatched);
  EXPECT_GE(settings, 1);
  EXPECT_GT(samples, 200);
  EXPECT_GT(matched, 200);
  EXPECT_EQ(mismatched, 0);
  // A sample of weight N is written as N events (async-profiler's layout); weights above 1 are
  // rare here (overflows while the signal was blocked, weight carried from a dropped sample).
  EXPECT_GE(static_cast<uint64_t>(samples), stats.recorded_samples);
  EXPECT_LE(static_cast<uint64_t>(samples), stats.recorded_samples * 11 / 10);

  // The JDK's own tool reads it (bounded: a bad file can make jfr hang).
  const char* jfr = "/usr/lib/jvm/java-17-openjdk-amd64/bin/jfr";
  std::string output;
  ASSERT_EQ(RunCommand(std::string("timeout 60 ") + jfr + " summary " + path, &output), 0)
      << output;
  EXPECT_NE(output.find("jdk.ExecutionSample"), std::string::npos) << output;
  output.clear();
  ASSERT_EQ(RunCommand(
                std::string("timeout 60 ") + jfr + " print --events ctxprof.Context --json " + path,
                &output),
            0)
      << output.substr(0, 2000);
  // jfr's JSON escapes '/'.
  EXPECT_NE(output.find("\"endpoint\": \"\\/checkout\""), std::string::npos);
  EXPECT_NE(output.find("\"endpoint\": \"\\/search\""), std::string::npos);
  output.clear();
  ASSERT_EQ(RunCommand(std::string("timeout 60 ") + jfr +
                           " print --events jdk.ExecutionSample --stack-depth 8 " + path,
                       &output),
            0);
  EXPECT_NE(output.find("SearchWork"), std::string::npos) << "a static function is named";
}

}  // namespace
