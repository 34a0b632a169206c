// Writes a recording in batches for the streaming test: after each batch the periodic flush
// publishes it (the flush interval passes and Tick() runs), the writer prints
// "published <samples so far>" and waits until every <ack file> holds at least that number, so
// the readers provably read the recording while it is being written.
// Usage: stream_writer file|repository <out> <batches> <samples per batch> <ack file>...
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "profiler/jfr_events/jfr_writer.h"
#include "tests/jfr/synthetic.h"

namespace {

long ReadAck(const char* path) {
  std::ifstream in(path);
  long value = -1;
  in >> value;
  return in ? value : -1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ctxprof;
  if (argc < 6 || (strcmp(argv[1], "file") != 0 && strcmp(argv[1], "repository") != 0)) {
    fprintf(stderr, "usage: %s file|repository out batches samples-per-batch ack-file...\n",
            argv[0]);
    return 2;
  }
  const int batches = atoi(argv[3]);
  const int per_batch = atoi(argv[4]);
  FakeClock clock;
  const uint64_t spacing = clock.TicksPerSecond() / 1000;
  Workload workload = MakeWorkload(4, batches * per_batch / 4, clock.Now() + spacing, spacing, 5);
  FakeFrameResolver frames;
  FakeThreadResolver threads;
  JfrWriterConfig config;
  (strcmp(argv[1], "file") == 0 ? config.path : config.repository) = argv[2];
  config.flush_interval_nanos = 100000000;  // 100 ms of (fake) recording time
  config.engine = "wall";
  JfrWriterInputs inputs;
  inputs.clock = &clock;
  inputs.frames = &frames;
  inputs.threads = &threads;
  inputs.dictionary = workload.dictionary.get();
  inputs.attributes = workload.attributes.get();
  StatusOr<std::unique_ptr<JfrWriter>> opened = JfrWriter::Open(config, inputs);
  if (!opened.ok()) {
    fprintf(stderr, "%s\n", opened.status().message().c_str());
    return 1;
  }
  JfrWriter* writer = opened.value().get();
  static SampleRecord sample;
  size_t next = 0;
  for (int batch = 1; batch <= batches; batch++) {
    for (int i = 0; i < per_batch && next < workload.samples.size(); i++, next++) {
      workload.Fill(next, &sample);
      clock.Set(sample.ticks);
      if (const Status added = writer->Add(sample); !added.ok()) {
        fprintf(stderr, "%s\n", added.message().c_str());
        return 1;
      }
    }
    // The periodic flush: the flush interval passes without samples, and the writer thread's
    // idle call publishes the batch.
    clock.Advance(clock.TicksPerSecond() / 10);
    if (const Status ticked = writer->Tick(); !ticked.ok()) {
      fprintf(stderr, "%s\n", ticked.message().c_str());
      return 1;
    }
    printf("published %zu\n", next);
    fflush(stdout);
    // The readers poll about once per second; the test's timeout bounds the wait.
    for (int ack = 5; ack < argc; ack++) {
      while (ReadAck(argv[ack]) < static_cast<long>(next)) usleep(20000);
    }
    printf("batch %d: every reader has read %zu samples of the recording being written\n", batch,
           next);
    fflush(stdout);
  }
  clock.Advance(spacing);
  if (const Status closed = writer->Close(); !closed.ok()) {
    fprintf(stderr, "%s\n", closed.message().c_str());
    return 1;
  }
  return 0;
}
