#include "tests/tools/tools_workload.h"

#include <cstdio>
#include <cstdlib>

namespace ctxprof {

Workload MakeToolsWorkload(uint64_t first_ticks, uint64_t spacing_ticks) {
  Workload workload;
  std::string error;
  workload.dictionary = Dictionary::Create(Dictionary::Options{}, &error);
  if (workload.dictionary == nullptr ||
      !workload.attributes->Register({"endpoint", "tenant"}, &error)) {
    fprintf(stderr, "%s\n", error.c_str());
    abort();
  }
  // FakeFrameResolver: Java method n is com/example/svc/Handler(n % 7).method n (größe_n when
  // n % 11 == 0); native id kNativeBase + 16 * n is libfake.so.native_function_n.
  auto java = [](uint64_t method) { return RawFrame{method, 0, FrameKind::kJavaJit}; };
  const RawFrame native3{0x7f0000000000ULL + 3 * 16, -1, FrameKind::kNative};
  workload.stacks = {
      {java(4), java(2), java(1)},           // 0
      {java(5), java(2), java(1)},           // 1
      {java(6), java(3), java(1)},           // 2
      {native3, java(8), java(3), java(1)},  // 3
      {},                                    // 4
      {java(22), java(1)},                   // 5
  };
  workload.stack_truncated.assign(workload.stacks.size(), false);

  const uint32_t checkout = workload.dictionary->Intern("/checkout");
  const uint32_t search = workload.dictionary->Intern("/search");
  const uint32_t acme = workload.dictionary->Intern("acme");
  const uint32_t globex = workload.dictionary->Intern("globex");
  const uint32_t odd = workload.dictionary->Intern("a b;c=[x]%");
  const uint32_t attributes[][2] = {
      {checkout, acme}, {checkout, globex}, {search, acme}, {search, odd}, {0, acme}};
  for (int c = 0; c < 5; c++) {
    ContextSnapshot context{};
    context.trace_id_high = 0x1000 + c;
    context.trace_id_low = 0x2000 + c;
    context.span_id = 0x3000 + c;
    context.attributes[0] = attributes[c][0];
    context.attributes[1] = attributes[c][1];
    workload.contexts.push_back(context);
  }
  struct Row {
    int32_t tid;
    SampleKind kind;
    uint32_t stack;
    int context;
  };
  const Row rows[] = {
      {101, SampleKind::kCpu, 0, 0},  {101, SampleKind::kCpu, 0, 0},
      {101, SampleKind::kWall, 1, 0}, {102, SampleKind::kCpu, 2, 2},
      {102, SampleKind::kCpu, 3, 2},  {102, SampleKind::kWall, 2, 3},
      {101, SampleKind::kCpu, 1, 1},  {101, SampleKind::kCpu, 5, -1},
      {102, SampleKind::kCpu, 4, -1}, {102, SampleKind::kWall, 3, 4},
      {101, SampleKind::kWall, 0, 1}, {102, SampleKind::kCpu, 2, 2},
  };
  uint64_t ticks = first_ticks;
  for (const Row& row : rows) {
    workload.samples.push_back(ExpectedSample{row.kind, row.tid, ticks, row.stack, row.context});
    ticks += spacing_ticks;
  }
  return workload;
}

Workload MakeToolsEventWorkload(uint64_t first_ticks, uint64_t spacing_ticks,
                                uint64_t ticks_per_second) {
  Workload workload = MakeToolsWorkload(first_ticks, spacing_ticks);
  std::string error;
  workload.class_names = Dictionary::Create(Dictionary::Options{}, &error);
  auto event = [&](const char* class_name, uint64_t amount) {
    EventFields fields{};
    fields.class_id = workload.class_names->Intern(class_name);
    fields.amount = amount;
    fields.object_bytes = 16;
    fields.park_time = kNoParkTimeout;
    return fields;
  };
  const uint64_t ms = ticks_per_second / 1000;
  EventFields park = event("java/util/concurrent/locks/ReentrantLock$NonfairSync", 5 * ms);
  park.park_time = 1000000;
  struct Row {
    int32_t tid;
    SampleKind kind;
    uint32_t stack;
    int context;
    EventFields event;
  };
  const Row rows[] = {
      {101, SampleKind::kAllocation, 0, 0, event("[B", 1000)},
      {101, SampleKind::kAllocation, 0, 0, event("java/lang/String", 3000)},
      {102, SampleKind::kAllocation, 2, 2, event("[B", 500)},
      {102, SampleKind::kMonitorEnter, 3, 2, event("java/lang/Object", 2 * ms)},
      {101, SampleKind::kThreadPark, 1, 1, park},
      {102, SampleKind::kAllocation, 5, -1, event("[Ljava/lang/String;", 7000)},
      {101, SampleKind::kCpu, 0, 0, EventFields{}},
  };
  workload.samples.clear();
  uint64_t ticks = first_ticks;
  for (const Row& row : rows) {
    workload.samples.push_back(
        ExpectedSample{row.kind, row.tid, ticks, row.stack, row.context, row.event});
    ticks += spacing_ticks;
  }
  return workload;
}

}  // namespace ctxprof
