// Writes the small recording the ctxprof tool tests check by hand (tools_test.cc and
// collapsed_expected.txt): two threads, attributes "endpoint" and "tenant", cpu and wall
// samples, six stacks (one empty, one with a non-ASCII method name) and five contexts (one with
// ' ', ';', '=', '[', ']' and '%' in a value, one without endpoint); with "events", the runtime
// events of MakeToolsEventWorkload instead.
// Usage: write_tools_recording <out.jfr> <jdk|ctxprof|events>
#include <cstdio>
#include <cstring>

#include "profiler/recording/jfr_writer.h"
#include "tests/jfr/synthetic.h"
#include "tests/tools/tools_workload.h"

int main(int argc, char** argv) {
  using namespace ctxprof;
  const bool events = argc == 3 && strcmp(argv[2], "events") == 0;
  if (argc != 3 || (strcmp(argv[2], "jdk") != 0 && strcmp(argv[2], "ctxprof") != 0 && !events)) {
    fprintf(stderr, "usage: %s out.jfr jdk|ctxprof|events\n", argv[0]);
    return 2;
  }
  FakeClock clock;
  // 1 ms apart; 10 ms for the events, whose waits last up to 5 ms.
  const uint64_t spacing = clock.TicksPerSecond() / (events ? 100 : 1000);
  Workload workload =
      events ? MakeToolsEventWorkload(clock.Now() + spacing, spacing, clock.TicksPerSecond())
             : MakeToolsWorkload(clock.Now() + spacing, spacing);
  JfrWriterConfig config;
  config.path = argv[1];
  config.cpu_samples =
      strcmp(argv[2], "ctxprof") == 0 ? CpuSampleEvent::kCtxprof : CpuSampleEvent::kJdk;
  config.engine = "perf_cpu_clock";
  config.interval_nanos = 10000000;
  std::string error;
  if (!WriteWorkload(workload, &clock, spacing, config, nullptr, &error)) {
    fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  return 0;
}
