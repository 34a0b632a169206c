// Helpers for tests that run a profiling session: CPU burning by thread CPU time, and queries
// over the aggregated, symbolized stacks.
#ifndef CTXPROF_TESTS_SUPPORT_SESSION_TEST_UTIL_H_
#define CTXPROF_TESTS_SUPPORT_SESSION_TEST_UTIL_H_

#include <time.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "profiler/session/aggregator.h"

namespace ctxprof::testing {

inline uint64_t ThreadCpuNanos() {
  timespec now;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000000ull + static_cast<uint64_t>(now.tv_nsec);
}

// Spins for about `iterations` multiply-adds; the result defeats dead-code elimination. Always
// inlined (even at -O0) so samples land in the calling function.
__attribute__((always_inline)) inline uint64_t Spin(uint64_t iterations, uint64_t seed) {
  uint64_t value = seed;
  for (uint64_t i = 0; i < iterations; ++i) {
    value = value * 6364136223846793005ull + 1442695040888963407ull;
    asm volatile("" : "+r"(value));
  }
  return value;
}

// True when a frame names `function`: the unqualified name, with any namespace prefix and any
// parameter list or clone suffix ("ns::(anonymous namespace)::Foo(int) [clone .isra.0]").
inline bool FrameIs(const std::string& frame, const std::string& function) {
  size_t end = frame.find('(');
  // "(anonymous namespace)::" is part of the qualification, not a parameter list.
  while (end != std::string::npos && frame.compare(end, 21, "(anonymous namespace)") == 0) {
    end = frame.find('(', end + 21);
  }
  const std::string name = frame.substr(0, end == std::string::npos ? frame.size() : end);
  if (name == function) return true;
  return name.size() > function.size() + 2 &&
         name.compare(name.size() - function.size(), function.size(), function) == 0 &&
         name.compare(name.size() - function.size() - 2, 2, "::") == 0;
}

inline bool StackContains(const AggregatedStack& stack, const std::string& function) {
  for (const std::string& frame : stack.frames) {
    if (FrameIs(frame, function)) return true;
  }
  return false;
}

// Sum of weights of the stacks that satisfy `keep`.
inline uint64_t Weight(const std::vector<AggregatedStack>& stacks,
                       const std::function<bool(const AggregatedStack&)>& keep) {
  uint64_t total = 0;
  for (const AggregatedStack& stack : stacks) {
    if (keep(stack)) total += stack.weight;
  }
  return total;
}

}  // namespace ctxprof::testing

#endif  // CTXPROF_TESTS_SUPPORT_SESSION_TEST_UTIL_H_
