// The JfrWriter the JFR benches measure: a file= recording at `path` for the cpu engine at
// 10 ms, on the fake clock and resolvers of tests/jfr/synthetic.h. Not thread-safe (one bench).
#ifndef CTXPROF_BENCH_JFR_BENCH_WRITER_H_
#define CTXPROF_BENCH_JFR_BENCH_WRITER_H_

#include <memory>
#include <string>

#include "profiler/jfr_events/jfr_writer.h"

namespace ctxprof {

inline StatusOr<std::unique_ptr<JfrWriter>> OpenBenchWriter(
    const std::string& path, bool all_contexts, const Clock* clock, FrameResolver* frames,
    ThreadResolver* threads, const Dictionary* dictionary, const AttributeRegistry* attributes) {
  JfrWriterConfig config;
  config.path = path;
  config.engine = "perf_cpu_clock";
  config.interval_nanos = 10000000;
  config.all_contexts = all_contexts;
  JfrWriterInputs inputs;
  inputs.clock = clock;
  inputs.frames = frames;
  inputs.threads = threads;
  inputs.dictionary = dictionary;
  inputs.attributes = attributes;
  return JfrWriter::Open(config, inputs);
}

}  // namespace ctxprof

#endif  // CTXPROF_BENCH_JFR_BENCH_WRITER_H_
