// Context attribution: threads switch between three contexts and do each context's work in its
// own function. Every sample taken inside a context's work function must carry exactly that
// context (trace id, span id and attribute value): 0 misattributed of >= 2,000 samples.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "context/process_context.h"
#include "profiler/ctxprof.h"
#include "profiler/profiler.h"
#include "tests/support/session_test_util.h"

namespace ctxprof {
namespace {

using ::ctxprof::testing::Spin;
using ::ctxprof::testing::StackContains;

constexpr int kContexts = 3;
constexpr uint64_t kTraceHigh = 0xC0FFEE;
const char* const kEndpoints[kContexts] = {"/checkout", "/search", "/login"};
const char* const kWorkFunctions[kContexts] = {"WorkForContext0", "WorkForContext1",
                                               "WorkForContext2"};
std::atomic<uint64_t> g_sink{0};

// Distinct functions (not one parameterised function) so the stack says which work ran.
__attribute__((noinline)) void WorkForContext0() { g_sink += Spin(150000, 10); }
__attribute__((noinline)) void WorkForContext1() { g_sink += Spin(150000, 11); }
__attribute__((noinline)) void WorkForContext2() { g_sink += Spin(150000, 12); }

void Worker(const std::atomic<bool>* stop, int seed) {
  int context = seed % kContexts;
  while (!stop->load(std::memory_order_relaxed)) {
    ctxprof_set_trace_context(kTraceHigh, static_cast<uint64_t>(context + 1),
                              static_cast<uint64_t>(100 + context));
    ASSERT_EQ(ctxprof_set_attribute(0, kEndpoints[context]), 0);
    switch (context) {
      case 0:
        WorkForContext0();
        break;
      case 1:
        WorkForContext1();
        break;
      default:
        WorkForContext2();
        break;
    }
    ctxprof_clear_context();
    context = (context + 1 + seed) % kContexts;  // different switching orders per thread
  }
}

TEST(ContextAttributionTest, EverySampleCarriesTheContextOfItsWork) {
  const char* names[] = {"endpoint"};
  ASSERT_EQ(ctxprof_register_attributes(names, 1), 0);
  char error[512];
  ASSERT_EQ(ctxprof_start("event=cpu,interval=1ms,wall=2ms,filter=context", error, sizeof(error)),
            0)
      << error;
  std::atomic<bool> stop{false};
  std::vector<std::thread> workers;
  for (int i = 0; i < 3; ++i) workers.emplace_back(Worker, &stop, i);

  constexpr uint64_t kWanted = 2000;
  uint64_t in_work = 0;
  for (int poll = 0; poll < 240 && in_work < kWanted; ++poll) {  // bounded: at most 60 s
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    in_work = 0;
    for (const AggregatedStack& stack : Profiler::Global()->Stacks()) {
      for (const char* function : kWorkFunctions) {
        if (StackContains(stack, function)) in_work += stack.samples;
      }
    }
  }
  stop = true;
  for (auto& worker : workers) worker.join();
  ASSERT_EQ(ctxprof_stop(), 0);

  std::string store_error;
  ProcessContext* store = ProcessContext::Get(&store_error);
  ASSERT_NE(store, nullptr) << store_error;
  const Dictionary* dictionary = &store->dictionary();
  uint64_t checked = 0, misattributed = 0, cpu = 0, wall = 0;
  for (const AggregatedStack& stack : Profiler::Global()->Stacks()) {
    for (int context = 0; context < kContexts; ++context) {
      if (!StackContains(stack, kWorkFunctions[context])) continue;
      checked += stack.samples;
      (stack.kind == SampleKind::kCpu ? cpu : wall) += stack.samples;
      const bool matches = stack.context.trace_id_high == kTraceHigh &&
                           stack.context.trace_id_low == static_cast<uint64_t>(context + 1) &&
                           stack.context.span_id == static_cast<uint64_t>(100 + context) &&
                           dictionary->ValueOf(stack.context.attributes[0]) == kEndpoints[context];
      if (!matches) {
        misattributed += stack.samples;
        std::string frames;
        for (const std::string& frame : stack.frames) frames += "\n    " + frame;
        ADD_FAILURE() << stack.samples << " " << (stack.kind == SampleKind::kCpu ? "cpu" : "wall")
                      << " sample(s) in " << kWorkFunctions[context] << " carry trace "
                      << stack.context.trace_id_high << ":" << stack.context.trace_id_low
                      << " span " << stack.context.span_id << " endpoint '"
                      << dictionary->ValueOf(stack.context.attributes[0]) << "'; stack:" << frames;
      }
    }
  }
  const AggregatorCounters counters = Profiler::Global()->Counters();
  printf(
      "checked %lu samples in work functions (cpu %lu, wall %lu): %lu misattributed; "
      "context busy %lu, torn %lu of %lu samples\n",
      checked, cpu, wall, misattributed, counters.context_busy, counters.context_torn,
      counters.samples);
  EXPECT_GE(checked, kWanted);
  EXPECT_GT(wall, 0u);
  EXPECT_EQ(misattributed, 0u);
  EXPECT_EQ(counters.context_torn, 0u);  // same-thread reads never see completing writes
}

}  // namespace
}  // namespace ctxprof
