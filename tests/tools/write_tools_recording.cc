// Writes the small recording the ctxprof tool tests check by hand (tools_test.cc and
// collapsed_expected.txt): two threads, attributes "endpoint" and "tenant", cpu and wall
// samples, six stacks (one empty, one with a non-ASCII method name) and five contexts (one with
// ' ', ';', '=', '[', ']' and '%' in a value, one without endpoint).
// Usage: write_tools_recording <out.jfr> <jdk|ctxprof|before>
// before: jdk, with only samples 1-6 (the "before" recording of the diff flame graph test).
#include <cstdio>
#include <cstring>

#include "profiler/recording/jfr_writer.h"
#include "tests/jfr/synthetic.h"
#include "tests/tools/tools_workload.h"

int main(int argc, char** argv) {
  using namespace ctxprof;
  if (argc != 3 || (strcmp(argv[2], "jdk") != 0 && strcmp(argv[2], "ctxprof") != 0 &&
                    strcmp(argv[2], "before") != 0)) {
    fprintf(stderr, "usage: %s out.jfr jdk|ctxprof|before\n", argv[0]);
    return 2;
  }
  FakeClock clock;
  const uint64_t spacing = clock.TicksPerSecond() / 1000;  // 1 ms
  Workload workload = MakeToolsWorkload(clock.Now() + spacing, spacing);
  if (strcmp(argv[2], "before") == 0) workload.samples.resize(6);
  JfrWriterConfig config;
  config.path = argv[1];
  config.cpu_samples =
      strcmp(argv[2], "ctxprof") == 0 ? CpuSampleEvent::kCtxprof : CpuSampleEvent::kJdk;
  config.engine = "cpu+wall";
  config.interval_nanos = 10000000;
  config.wall_interval_nanos = 20000000;
  std::string error;
  if (!WriteWorkload(workload, &clock, spacing, config, nullptr, &error)) {
    fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  return 0;
}
