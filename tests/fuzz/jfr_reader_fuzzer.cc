// libFuzzer target for the JFR reader (profiler/jfr/jfr_reader.h): parses arbitrary bytes with
// and without allow_unfinished_chunks and checks the reader's robustness contract: a parse or
// an error naming the input and the offset, never a crash, a hang or an unbounded allocation
// (the latter two are caught by run_fuzzers.sh's -timeout= and -rss_limit_mb=). A successful
// parse is then queried the way the ctxprof tools query it.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "profiler/jfr/jfr_reader.h"

namespace ctxprof {
namespace {

constexpr char kInputName[] = "fuzz-input";

void Check(bool condition, const char* invariant) {
  if (condition) return;
  fprintf(stderr, "invariant violated: %s\n", invariant);
  abort();
}

// Chunks lie inside the input in file order; every event belongs to a chunk and lies inside it.
void CheckLayout(const JfrReader& reader, size_t input_size) {
  uint64_t previous_end = 0;
  for (const JfrChunkInfo& chunk : reader.chunks()) {
    Check(chunk.file_offset >= previous_end && chunk.size <= input_size &&
              chunk.file_offset <= input_size - chunk.size,
          "chunks lie inside the input, in order");
    previous_end = chunk.file_offset + chunk.size;
  }
  for (const JfrEvent& event : reader.events()) {
    Check(event.chunk < reader.chunks().size(), "an event's chunk exists");
    const JfrChunkInfo& chunk = reader.chunks()[event.chunk];
    Check(event.file_offset >= chunk.file_offset &&
              event.file_offset < chunk.file_offset + chunk.size,
          "an event lies inside its chunk");
  }
}

// What report, flame graph and pprof do with every event.
void QueryEvents(const JfrReader& reader) {
  for (const JfrEvent& event : reader.events()) {
    const int64_t ticks = event.start_ticks();
    reader.EpochNanosOf(ticks);
    reader.NanosOf(event.Field("duration").integer());
    JfrReader::FramesOf(event.Field("stackTrace"));
    reader.ContextAt(event.thread().Field("osThreadId").integer(), ticks);
  }
}

bool ParseOnce(const uint8_t* data, size_t size, bool allow_unfinished_chunks, JfrReader* reader) {
  JfrReader::Options options;
  options.allow_unfinished_chunks = allow_unfinished_chunks;
  const Status read = reader->Parse(kInputName, std::vector<uint8_t>(data, data + size), options);
  if (!read.ok()) {
    Check(read.message().rfind(std::string(kInputName) + ": offset ", 0) == 0,
          "an error names the input and the offset");
    return false;
  }
  CheckLayout(*reader, size);
  QueryEvents(*reader);
  return true;
}

}  // namespace
}  // namespace ctxprof

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ctxprof::JfrReader strict;
  const bool strict_ok = ctxprof::ParseOnce(data, size, /*allow_unfinished_chunks=*/false, &strict);
  ctxprof::JfrReader lenient;
  const bool lenient_ok =
      ctxprof::ParseOnce(data, size, /*allow_unfinished_chunks=*/true, &lenient);
  // Finished chunks read the same either way; the option only adds unfinished ones.
  if (strict_ok) {
    ctxprof::Check(lenient_ok && lenient.events().size() == strict.events().size() &&
                       lenient.chunks().size() == strict.chunks().size(),
                   "allow_unfinished_chunks does not change a file of finished chunks");
  }
  return 0;
}
