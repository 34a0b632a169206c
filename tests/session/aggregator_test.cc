// The aggregator's memory bound (aggregator.h, "Memory"): past its limits, new keys lose their
// request ids, then their whole context, while every sample's weight is still counted.
#include "profiler/session/aggregator.h"

#include <unistd.h>

#include <fstream>
#include <map>
#include <memory>
#include <string>

#include "gtest/gtest.h"

namespace ctxprof {
namespace {

// Two stacks of native frames (ids the symbolizer cannot name), distinct and fixed.
void SetStack(SampleRecord* record, int stack) {
  record->frame_count = 3;
  for (uint32_t i = 0; i < record->frame_count; ++i) {
    record->frames[i] =
        RawFrame{0x1000u * (stack + 1) + i, kNativeReturnAddress, FrameKind::kNative};
  }
}

std::unique_ptr<SampleRecord> Sample(uint64_t trace, uint32_t endpoint, int stack,
                                     uint32_t weight) {
  auto record = std::make_unique<SampleRecord>();
  record->kind = SampleKind::kCpu;
  record->engine = Engine::kPerfCpuClock;
  record->state = ThreadState::kRunning;
  record->weight = weight;
  record->context.trace_id_low = trace;
  record->context.span_id = trace;
  record->context.attributes[0] = endpoint;
  SetStack(record.get(), stack);
  return record;
}

struct Totals {
  uint64_t entries = 0;
  uint64_t samples = 0;
  uint64_t weight = 0;
  std::map<ContextDetail, uint64_t> weight_by_detail;
};

Totals Sum(Aggregator* aggregator) {
  Totals totals;
  for (const RawAggregatedStack& stack : aggregator->RawStacks()) {
    ++totals.entries;
    totals.samples += stack.samples;
    totals.weight += stack.weight;
    totals.weight_by_detail[stack.detail] += stack.weight;
  }
  return totals;
}

TEST(AggregatorTest, BelowTheLimitsEveryRequestKeepsItsEntry) {
  Aggregator aggregator({"endpoint"}, nullptr, nullptr, AggregatorLimits{100, 200});
  for (uint64_t trace = 1; trace <= 50; ++trace) aggregator.Consume(*Sample(trace, 1, 0, 2));
  Totals totals = Sum(&aggregator);
  EXPECT_EQ(totals.entries, 50u);
  EXPECT_EQ(totals.weight, 100u);
  EXPECT_EQ(totals.weight_by_detail[ContextDetail::kFull], 100u);
  EXPECT_EQ(aggregator.counters().request_ids_folded, 0u);
  for (const RawAggregatedStack& stack : aggregator.RawStacks()) {
    EXPECT_NE(stack.context.trace_id_low, 0u);
    EXPECT_EQ(stack.context.attributes[0], 1u);
  }
}

TEST(AggregatorTest, PastTheLimitsNewKeysLoseDetailButNoWeight) {
  constexpr size_t kRequestIds = 40, kContexts = 60;
  Aggregator aggregator({"endpoint"}, nullptr, nullptr, AggregatorLimits{kRequestIds, kContexts});
  // The first 40 requests fill the limit with full detail.
  for (uint64_t trace = 1; trace <= kRequestIds; ++trace) {
    aggregator.Consume(*Sample(trace, 1, 0, 1));
  }
  // A request seen before the limit keeps accumulating under its own entry.
  aggregator.Consume(*Sample(7, 1, 0, 5));
  // 10,000 new requests over 30 endpoints and 2 stacks, weights 1..3.
  uint64_t expected_weight = kRequestIds + 5;
  uint64_t new_samples = 0;
  for (uint64_t trace = 1000; trace < 11000; ++trace) {
    const uint32_t weight = 1 + trace % 3;
    aggregator.Consume(*Sample(trace, 1 + trace % 30, static_cast<int>(trace % 2), weight));
    expected_weight += weight;
    ++new_samples;
  }
  Totals totals = Sum(&aggregator);
  EXPECT_EQ(totals.samples, kRequestIds + 1 + new_samples);
  EXPECT_EQ(totals.weight, expected_weight) << "folding must never lose weight";
  // Full detail: the 40 first requests only (trace 7 with weight 1 + 5).
  EXPECT_EQ(totals.weight_by_detail[ContextDetail::kFull], kRequestIds + 5);
  EXPECT_GT(totals.weight_by_detail[ContextDetail::kWithoutRequestIds], 0u);
  EXPECT_GT(totals.weight_by_detail[ContextDetail::kNone], 0u);
  // Entries: the 40 full ones, partial ones up to the second limit, then one per stack without
  // context.
  EXPECT_EQ(totals.entries, kContexts + 2);
  const AggregatorCounters counters = aggregator.counters();
  EXPECT_EQ(counters.request_ids_folded, new_samples);
  EXPECT_GT(counters.contexts_folded, 0u);
  EXPECT_LT(counters.contexts_folded, new_samples);
  for (const RawAggregatedStack& stack : aggregator.RawStacks()) {
    if (stack.detail == ContextDetail::kFull) {
      EXPECT_NE(stack.context.trace_id_low, 0u);
    } else if (stack.detail == ContextDetail::kWithoutRequestIds) {
      EXPECT_EQ(stack.context.trace_id_low, 0u);
      EXPECT_EQ(stack.context.span_id, 0u);
      EXPECT_NE(stack.context.attributes[0], 0u) << "attributes survive the first fold";
    } else {
      EXPECT_TRUE(stack.context.empty());
    }
  }
}

TEST(AggregatorTest, SamplesWithoutRequestIdsAreNotMarkedFolded) {
  Aggregator aggregator({"endpoint"}, nullptr, nullptr, AggregatorLimits{1, 100});
  aggregator.Consume(*Sample(1, 1, 0, 1));
  aggregator.Consume(*Sample(0, 2, 0, 1));  // no trace: nothing to fold
  aggregator.Consume(*Sample(0, 0, 1, 1));  // no context at all
  Totals totals = Sum(&aggregator);
  EXPECT_EQ(totals.entries, 3u);
  EXPECT_EQ(totals.weight_by_detail[ContextDetail::kFull], 3u);
  EXPECT_EQ(aggregator.counters().request_ids_folded, 0u);
}

TEST(AggregatorTest, CollapsedOutputNamesWhatWasFolded) {
  Aggregator aggregator({"endpoint"}, nullptr, nullptr, AggregatorLimits{1, 2});
  aggregator.Consume(*Sample(1, 1, 0, 1));  // full
  aggregator.Consume(*Sample(2, 1, 0, 1));  // trace folded, endpoint kept
  aggregator.Consume(*Sample(3, 2, 0, 1));  // endpoint 2 is new past the second limit
  const std::string path =
      std::string(getenv("TEST_TMPDIR") ? getenv("TEST_TMPDIR") : "/tmp") + "/aggregator.txt";
  ASSERT_TRUE(aggregator.WriteCollapsed(path).ok());
  std::ifstream in(path);
  std::map<std::string, int> prefixes;
  for (std::string line; std::getline(in, line);) {
    // The pseudo-frames: what precedes the stack's 3 frames (then " <weight>").
    size_t end = line.rfind(' ');
    for (int frame = 0; frame < 3 && end != std::string::npos; ++frame) {
      end = line.rfind(';', end - 1);
    }
    ASSERT_NE(end, std::string::npos) << line;
    ++prefixes[line.substr(0, end)];
  }
  EXPECT_EQ(prefixes["[cpu];[running];[trace=00000000000000000000000000000001];"
                     "[span=0000000000000001];[endpoint=#1]"],
            1);
  EXPECT_EQ(prefixes["[cpu];[running];[trace=folded];[endpoint=#1]"], 1);
  EXPECT_EQ(prefixes["[cpu];[running];[context=folded]"], 1);
  EXPECT_EQ(prefixes.size(), 3u);
  unlink(path.c_str());
}

}  // namespace
}  // namespace ctxprof
