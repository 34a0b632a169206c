// Writes a recording whose native frames carry the C++ symbols of FakeFrameResolver::kCppSymbols,
// split into method name and descriptor as NativeFrameResolver writes them
// (profiler/jfr/native_method.h), for native_names_test.sh: one CPU sample per stack, leaf first:
//   0: gather_lrg_masks(bool), as_C_string() const, Java method 1
//   1: push_back(int const&), outer(...) [clone .isra.0], Java methods 2, 1
//   2: (anonymous namespace)::helper(char const*), read, Java method 1
// Usage: write_native_names_recording <out.jfr>
#include <cstdio>
#include <cstdlib>

#include "profiler/jfr_events/jfr_writer.h"
#include "tests/jfr/synthetic.h"

int main(int argc, char** argv) {
  using namespace ctxprof;
  if (argc != 2) {
    fprintf(stderr, "usage: %s out.jfr\n", argv[0]);
    return 2;
  }
  FakeClock clock;
  const uint64_t spacing = clock.TicksPerSecond() / 1000;
  Workload workload;
  std::string error;
  workload.dictionary = Dictionary::Create(Dictionary::Options{}, &error);
  if (workload.dictionary == nullptr) {
    fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  auto java = [](uint64_t method) { return RawFrame{method, 0, FrameKind::kJavaJit}; };
  auto cpp = [](uint64_t symbol) {
    return RawFrame{0x7f0000000000ULL + (FakeFrameResolver::kFirstCppFunction + symbol) * 16, -1,
                    FrameKind::kNative};
  };
  workload.stacks = {
      {cpp(0), cpp(1), java(1)}, {cpp(2), cpp(3), java(2), java(1)}, {cpp(4), cpp(5), java(1)}};
  workload.stack_truncated.assign(workload.stacks.size(), false);
  for (uint32_t stack = 0; stack < workload.stacks.size(); stack++) {
    workload.samples.push_back(
        ExpectedSample{SampleKind::kCpu, 101, clock.Now() + (stack + 1) * spacing, stack, -1});
  }
  JfrWriterConfig config;
  config.path = argv[1];
  config.engine = "cpu";
  config.interval_nanos = 10000000;
  if (Status written = WriteWorkload(workload, &clock, spacing, config, nullptr); !written.ok()) {
    fprintf(stderr, "%s\n", written.message().c_str());
    return 1;
  }
  return 0;
}
