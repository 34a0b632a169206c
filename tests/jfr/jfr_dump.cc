// Test helper for recordings written by the JDK.
//   jfr_dump <recording.jfr>
//       prints "<event type> <count>" for every event type, using JfrReader (the JDK
//       cross-check compares it with `jfr summary`);
//   jfr_dump --mutate <rounds> <recording.jfr>
//       parses <rounds> copies of the file with 1-4 random bytes changed (deterministic seed)
//       and exits non-zero if any error message fails to name an offset; a crash or hang fails
//       the calling test.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <random>

#include "profiler/jfr/jfr_reader.h"

namespace {

int Mutate(int rounds, const char* path) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
  if (bytes.empty()) {
    fprintf(stderr, "cannot read %s\n", path);
    return 1;
  }
  std::mt19937 random(20261122);
  int errors = 0;
  for (int round = 0; round < rounds; round++) {
    std::vector<uint8_t> mutated = bytes;
    const int changes = 1 + static_cast<int>(random() % 4);
    for (int c = 0; c < changes; c++) mutated[random() % mutated.size()] = random();
    ctxprof::JfrReader reader;
    const ctxprof::Status read = reader.Parse("mutated", std::move(mutated), {});
    if (!read.ok()) {
      errors++;
      if (read.message().rfind("mutated: offset ", 0) != 0) {
        fprintf(stderr, "round %d: error without an offset: %s\n", round, read.message().c_str());
        return 1;
      }
    }
  }
  printf("%d mutated copies: %d rejected with an offset, %d parsed\n", rounds, errors,
         rounds - errors);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && strcmp(argv[1], "--mutate") == 0) return Mutate(atoi(argv[2]), argv[3]);
  if (argc != 2) {
    fprintf(stderr, "usage: %s [--mutate rounds] recording.jfr\n", argv[0]);
    return 2;
  }
  ctxprof::JfrReader reader;
  if (const ctxprof::Status read = reader.Read(argv[1], {}); !read.ok()) {
    fprintf(stderr, "%s\n", read.message().c_str());
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
