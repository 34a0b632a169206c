// Sends JFR files through the otlp= exporter (OtlpConfigFromOptions + Uploader) as if the writer
// had finished them, for otlp_test.sh: the runtime-event kinds (alloc, monitor, park) need a
// JVM to be recorded, so their push is checked on the synthetic recording of
// tests/tools/write_tools_recording instead. Prints "uploaded N dropped M" after the stop.
// Usage: otlp_chunk_sender "<options>" FILE.jfr...
// Exit: 0 ok, 3 bad options or exporter start (the message on stderr).
#include <cstdio>
#include <memory>
#include <utility>

#include "profiler/export/otlp_exporter.h"
#include "profiler/export/uploader.h"
#include "profiler/options.h"

int main(int argc, char** argv) {
  using namespace ctxprof;
  if (argc < 3) {
    fprintf(stderr, "usage: %s OPTIONS FILE.jfr...\n", argv[0]);
    return 2;
  }
  StatusOr<Options> options = ParseOptions(argv[1]);
  if (!options.ok()) {
    fprintf(stderr, "%s\n", options.status().message().c_str());
    return 3;
  }
  StatusOr<UploaderConfig> config = OtlpConfigFromOptions(options.value());
  if (!config.ok()) {
    fprintf(stderr, "%s\n", config.status().message().c_str());
    return 3;
  }
  config.value().first_backoff = std::chrono::milliseconds(100);
  StatusOr<std::unique_ptr<Uploader>> uploader = Uploader::Start(config.value());
  if (!uploader.ok()) {
    fprintf(stderr, "%s\n", uploader.status().message().c_str());
    return 3;
  }
  for (int i = 2; i < argc; i++) {
    FinishedChunk chunk;
    chunk.path = argv[i];
    uploader.value()->Enqueue(std::move(chunk));
  }
  uploader.value()->Stop(std::chrono::milliseconds(5000));
  printf("uploaded %llu dropped %llu\n",
         static_cast<unsigned long long>(uploader.value()->uploaded()),
         static_cast<unsigned long long>(uploader.value()->dropped()));
  return 0;
}
