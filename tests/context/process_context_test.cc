#include "context/process_context.h"

#include <gtest/gtest.h>

namespace ctxprof {
namespace {

TEST(ProcessContextTest, InitOnceThenGetReturnsTheSameStore) {
  std::string error;
  Dictionary::Options options;
  options.max_values = 1000;
  ProcessContext* store = ProcessContext::Init(options, &error);
  ASSERT_NE(store, nullptr) << error;
  EXPECT_EQ(ProcessContext::Get(&error), store);
  EXPECT_EQ(ProcessContext::Init(options, &error), store) << "same options: same store";
  EXPECT_EQ(store->dictionary().options().max_values, 1000u);
  EXPECT_EQ(&store->map(), ContextMap::Global());

  options.max_values = 2000;
  EXPECT_EQ(ProcessContext::Init(options, &error), nullptr);
  EXPECT_NE(error.find("already created with max_values=1000"), std::string::npos) << error;
}

TEST(ProcessContextTest, IdsAndSlotsAreSharedByEveryCaller) {
  std::string error;
  ProcessContext* store = ProcessContext::Get(&error);
  ASSERT_NE(store, nullptr) << error;
  const uint32_t id = store->dictionary().Intern("/checkout");
  ASSERT_TRUE(store->attributes().Register({"endpoint"}, &error)) << error;
  ProcessContext* again = ProcessContext::Get(&error);
  EXPECT_EQ(again->dictionary().Find("/checkout"), id);
  EXPECT_EQ(again->attributes().SlotOf("endpoint"), 0);
}

}  // namespace
}  // namespace ctxprof
