#include "profiler/notice.h"

#include <cstdio>

namespace ctxprof {

void PrintNotice(const std::string& message) {
  const std::string line = "ctxprof: " + message + "\n";
  fwrite(line.data(), 1, line.size(), stderr);
  fflush(stderr);
}

}  // namespace ctxprof
