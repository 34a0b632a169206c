// ThreadContext writes the calling thread's own block in the process store: what a signal
// handler on this thread would read back, slot checks against the registry, and the clears of
// the thread lifecycle hooks. (kNoBlock needs a tid beyond the map's capacity, which a test
// cannot choose; ContextMapTest covers BlockFor's range check.)
#include "context/thread_context.h"

#include <gtest/gtest.h>

#include <thread>

#include "context/process_context.h"

namespace ctxprof {
namespace {

ProcessContext* Store() {
  std::string error;
  ProcessContext* store = ProcessContext::Get(&error);
  EXPECT_NE(store, nullptr) << error;
  return store;
}

// The calling thread's block as the handler reads it (one attempt: same thread).
ContextSnapshot ReadOwnBlock() {
  ContextSnapshot read{};
  EXPECT_EQ(ReadBlock(*Store()->map().BlockFor(CurrentTid()), &read, kSameThreadReadAttempts),
            ReadStatus::kConsistent);
  return read;
}

TEST(ThreadContextTest, WritesLandInTheCallingThreadsBlock) {
  std::string error;
  ASSERT_TRUE(Store()->attributes().Register({"endpoint", "tenant"}, &error)) << error;
  EXPECT_EQ(ThreadContext::OwnBlock(), Store()->map().BlockFor(CurrentTid()));

  EXPECT_EQ(ThreadContext::SetTrace(1, 2, 3), ContextWrite::kWritten);
  EXPECT_EQ(ThreadContext::SetAttribute(0, "/checkout"), ContextWrite::kWritten);
  EXPECT_EQ(ThreadContext::SetAttributeId(1, 77), ContextWrite::kWritten);
  ContextSnapshot read = ReadOwnBlock();
  EXPECT_EQ(read.trace_id_high, 1u);
  EXPECT_EQ(read.trace_id_low, 2u);
  EXPECT_EQ(read.span_id, 3u);
  EXPECT_EQ(Store()->dictionary().ValueOf(read.attributes[0]), "/checkout");
  EXPECT_EQ(read.attributes[1], 77u);

  ContextSnapshot copy{};
  ThreadContext::Read(&copy);
  EXPECT_EQ(copy, read);

  EXPECT_EQ(ThreadContext::SetAttribute(0, nullptr), ContextWrite::kWritten);
  EXPECT_EQ(ReadOwnBlock().attributes[0], Dictionary::kUnsetId);
  EXPECT_EQ(ThreadContext::Clear(), ContextWrite::kWritten);
  EXPECT_TRUE(ReadOwnBlock().empty());

  ContextSnapshot whole{};
  whole.span_id = 9;
  whole.attributes[1] = 5;
  EXPECT_EQ(ThreadContext::SetAll(whole), ContextWrite::kWritten);
  EXPECT_EQ(ReadOwnBlock(), whole);
  ThreadContext::Clear();
}

TEST(ThreadContextTest, UnregisteredSlotsAreRefusedAndWriteNothing) {
  const int registered = Store()->attributes().size();
  ThreadContext::SetTrace(0, 0, 4);
  const uint32_t values_before = Store()->dictionary().size();
  EXPECT_EQ(ThreadContext::SetAttribute(registered, "x"), ContextWrite::kBadSlot);
  EXPECT_EQ(ThreadContext::SetAttribute(-1, "x"), ContextWrite::kBadSlot);
  EXPECT_EQ(ThreadContext::SetAttributeId(kAttributeSlots, 2), ContextWrite::kBadSlot);
  EXPECT_EQ(Store()->dictionary().size(), values_before) << "a refused value is not interned";
  ContextSnapshot expected{};
  expected.span_id = 4;
  EXPECT_EQ(ReadOwnBlock(), expected);
  ThreadContext::Clear();
}

TEST(ThreadContextTest, ThreadStartAndEndClearTheThreadsBlock) {
  std::thread([] {
    ThreadContext::SetTrace(0, 1, 2);
    ThreadContext::OnThreadStart(CachedTid());
    EXPECT_TRUE(ReadOwnBlock().empty()) << "a recycled tid does not inherit a context";
    ThreadContext::SetTrace(0, 1, 2);
    ThreadContext::OnThreadEnd(CachedTid());
    EXPECT_TRUE(ReadOwnBlock().empty()) << "an ended thread leaves no context behind";
  }).join();
}

TEST(ThreadContextTest, EachThreadWritesOnlyItsOwnBlock) {
  ThreadContext::SetTrace(0, 0, 1);
  std::thread([] {
    ThreadContext::SetTrace(0, 0, 2);
    EXPECT_EQ(ReadOwnBlock().span_id, 2u);
    ThreadContext::Clear();
  }).join();
  EXPECT_EQ(ReadOwnBlock().span_id, 1u);
  EXPECT_EQ(ThreadContext::StoreError(), "");
  ThreadContext::Clear();
}

}  // namespace
}  // namespace ctxprof
