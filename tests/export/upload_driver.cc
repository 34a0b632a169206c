// A native program profiled through the C API with upload= options, for upload_test.sh: two
// threads serve requests of endpoints /checkout and /search under trace contexts, burning CPU
// and sleeping, for SECONDS; then the session stops and the time ctxprof_stop took is printed
// ("stop took N ms") — the uploader's exit bound.
// Usage: upload_driver "<options>" SECONDS
// Exit: 0 ok, 3 ctxprof_start failed (its message on stderr), 4 ctxprof_stop failed.
#include <time.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "profiler/ctxprof.h"

namespace {

std::atomic<bool> running{true};
std::atomic<uint64_t> sink{0};

__attribute__((noinline)) void Burn(int iterations) {
  uint64_t x = 1;
  for (int i = 0; i < iterations; i++) x = x * 6364136223846793005ull + 1442695040888963407ull;
  sink += x;
}

void Serve(const char* endpoint, uint64_t trace) {
  for (uint64_t request = 1; running.load(); request++) {
    ctxprof_set_trace_context(trace, request, trace * 1000 + request);
    ctxprof_set_attribute(0, endpoint);
    ctxprof_set_attribute(1, request % 2 == 0 ? "acme" : "globex");
    Burn(2000000);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ctxprof_clear_context();
    Burn(200000);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s OPTIONS SECONDS\n", argv[0]);
    return 2;
  }
  const char* names[] = {"endpoint", "tenant"};
  if (ctxprof_register_attributes(names, 2) != 0) return 2;
  char error[1024];
  if (ctxprof_start(argv[1], error, sizeof(error)) != 0) {
    fprintf(stderr, "start failed: %s\n", error);
    return 3;
  }
  std::thread checkout(Serve, "/checkout", 0xC0FFEE);
  std::thread search(Serve, "/search", 0xBEEF);
  std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(atof(argv[2]) * 1000)));
  running = false;
  checkout.join();
  search.join();
  const auto start = std::chrono::steady_clock::now();
  const int stopped = ctxprof_stop();
  const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now() - start)
                          .count();
  printf("stop took %lld ms\n", static_cast<long long>(millis));
  return stopped == 0 ? 0 : 4;
}
