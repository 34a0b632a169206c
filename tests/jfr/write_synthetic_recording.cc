// Writes a synthetic recording and its expectation, for the `jfr` tool test.
// Usage: write_synthetic_recording <out> <expected.json> <jdk|ctxprof|contextid>
//        [chunk_size_bytes [repository|flushes]]
// jdk: CPU samples as jdk.ExecutionSample; ctxprof: as ctxprof.CpuSample; contextid: jdk, and
// every sample event ends with a contextId.
// With "repository", <out> is a folder that receives one file per chunk. With "flushes", <out>
// is a file flushed every 100 ms (a chunk per flush, folded at the end).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "profiler/jfr_events/jfr_writer.h"
#include "tests/jfr/synthetic.h"

int main(int argc, char** argv) {
  using namespace ctxprof;
  if (argc < 4) {
    fprintf(stderr,
            "usage: %s out expected.json jdk|ctxprof|contextid [chunk_size_bytes "
            "[repository|flushes]]\n",
            argv[0]);
    return 2;
  }
  FakeClock clock;
  const uint64_t spacing = clock.TicksPerSecond() / 1000;  // 1 ms
  Workload workload = MakeWorkload(12, 120, clock.Now() + spacing, spacing, 42);
  JfrWriterConfig config;
  if (argc > 5 && strcmp(argv[5], "repository") == 0) {
    config.repository = argv[1];
  } else {
    config.path = argv[1];
  }
  config.cpu_samples =
      strcmp(argv[3], "ctxprof") == 0 ? CpuSampleEvent::kCtxprof : CpuSampleEvent::kJdk;
  config.context_id = strcmp(argv[3], "contextid") == 0;
  config.chunk_size_bytes = argc > 4 ? strtoull(argv[4], nullptr, 10) : 0;
  // With several chunks, drop unused stacks at every rotation, so the JDK sees stacks that
  // come back under new keys.
  if (config.chunk_size_bytes != 0) config.stack_cache_bytes = 1;
  // One file without a chunk size: one chunk written at once, or with "flushes" one chunk per
  // flush, folded at the end.
  if (config.chunk_size_bytes == 0 && !config.path.empty()) config.flush_interval_nanos = 0;
  if (argc > 5 && strcmp(argv[5], "flushes") == 0) config.flush_interval_nanos = 100000000;
  config.engine = "cpu+wall";
  config.interval_nanos = 1000000;
  config.fallbacks = "none";
  const Status written =
      WriteWorkload(workload, &clock, spacing, config, [] { return uint64_t{7}; });
  if (!written.ok()) {
    fprintf(stderr, "%s\n", written.message().c_str());
    return 1;
  }
  std::ofstream expected(argv[2]);
  expected << workload.ExpectationJson();
  return expected.good() ? 0 : 1;
}
