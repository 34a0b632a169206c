// Prints "<event type> <count>" for every event type in a recording, using JfrReader; the JDK
// cross-check test compares it with `jfr summary`.
#include <cstdio>
#include <map>

#include "profiler/jfr/jfr_reader.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s recording.jfr\n", argv[0]);
    return 2;
  }
  ctxprof::JfrReader reader;
  std::string error;
  if (!reader.Read(argv[1], {}, &error)) {
    fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  std::map<std::string, size_t> counts;
  size_t frames = 0;
  for (const ctxprof::JfrEvent& event : reader.events()) {
    counts[event.type_name()]++;
    frames += ctxprof::JfrReader::FramesOf(event.Field("stackTrace")).size();
  }
  for (const auto& [type, count] : counts) printf("%s %zu\n", type.c_str(), count);
  fprintf(stderr, "chunks %zu, events %zu, stack frames %zu\n", reader.chunks().size(),
          reader.events().size(), frames);
  return 0;
}
