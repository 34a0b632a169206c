// Writes the small recording the ctxprof tool tests check by hand (tools_test.cc and
// collapsed_expected.txt): two threads, attributes "endpoint" and "tenant", cpu and wall
// samples, six stacks (one empty, one with a non-ASCII method name) and five contexts (one with
// ' ', ';', '=', '[', ']' and '%' in a value, one without endpoint); with "events", the runtime
// events of MakeToolsEventWorkload instead.
// Usage: write_tools_recording <out.jfr> <jdk|ctxprof|before|events>
// before: jdk, with only samples 1-6 (the "before" recording of the diff flame graph test).
#include <cstdio>
#include <cstring>

#include "profiler/jfr_events/jfr_writer.h"
#include "tests/jfr/synthetic.h"
#include "tests/tools/tools_workload.h"

int main(int argc, char** argv) {
  using namespace ctxprof;
  const bool events = argc == 3 && strcmp(argv[2], "events") == 0;
  if (argc != 3 || (strcmp(argv[2], "jdk") != 0 && strcmp(argv[2], "ctxprof") != 0 &&
                    strcmp(argv[2], "before") != 0 && !events)) {
    fprintf(stderr, "usage: %s out.jfr jdk|ctxprof|before|events\n", argv[0]);
    return 2;
  }
  FakeClock clock;
  // 1 ms apart; 10 ms for the events, whose waits last up to 5 ms.
  const uint64_t spacing = clock.TicksPerSecond() / (events ? 100 : 1000);
  Workload workload =
      events ? MakeToolsEventWorkload(clock.Now() + spacing, spacing, clock.TicksPerSecond())
             : MakeToolsWorkload(clock.Now() + spacing, spacing);
  if (strcmp(argv[2], "before") == 0) workload.samples.resize(6);
  JfrWriterConfig config;
  config.path = argv[1];
  config.cpu_samples =
      strcmp(argv[2], "ctxprof") == 0 ? CpuSampleEvent::kCtxprof : CpuSampleEvent::kJdk;
  config.engine = "cpu+wall";
  config.interval_nanos = 10000000;
  config.wall_interval_nanos = 20000000;
  if (events) {
    config.alloc_interval_bytes = 524288;
    config.lock_threshold_nanos = 1000000;
  }
  if (Status written = WriteWorkload(workload, &clock, spacing, config, nullptr); !written.ok()) {
    fprintf(stderr, "%s\n", written.message().c_str());
    return 1;
  }
  return 0;
}
