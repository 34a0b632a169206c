#include "context/attribute_registry.h"

#include <gtest/gtest.h>

#include <thread>

namespace ctxprof {
namespace {

TEST(AttributeRegistryTest, NamesMapToSlotsInOrder) {
  AttributeRegistry registry;
  std::string error;
  ASSERT_TRUE(registry.Register({"endpoint", "tenant", "db.system", "http-method"}, &error))
      << error;
  EXPECT_EQ(registry.size(), 4);
  EXPECT_EQ(registry.SlotOf("endpoint"), 0);
  EXPECT_EQ(registry.SlotOf("tenant"), 1);
  EXPECT_EQ(registry.SlotOf("http-method"), 3);
  EXPECT_EQ(registry.SlotOf("missing"), -1);
  EXPECT_EQ(registry.NameOf(2), "db.system");
  EXPECT_EQ(registry.NameOf(4), "");
  EXPECT_EQ(registry.NameOf(-1), "");
}

TEST(AttributeRegistryTest, RegisteringAgainKeepsSlotsAndAppendsNewNames) {
  AttributeRegistry registry;
  std::string error;
  ASSERT_TRUE(registry.Register({"endpoint", "tenant"}, &error)) << error;
  ASSERT_TRUE(registry.Register({"region", "tenant"}, &error)) << error;
  EXPECT_EQ(registry.SlotOf("endpoint"), 0);
  EXPECT_EQ(registry.SlotOf("tenant"), 1);
  EXPECT_EQ(registry.SlotOf("region"), 2);
  EXPECT_EQ(registry.names(), (std::vector<std::string>{"endpoint", "tenant", "region"}));
}

TEST(AttributeRegistryTest, AllSlotsCanBeUsed) {
  AttributeRegistry registry;
  std::string error;
  std::vector<std::string> names;
  for (int i = 0; i < kAttributeSlots; i++) names.push_back("a" + std::to_string(i));
  EXPECT_TRUE(registry.Register(names, &error)) << error;
  EXPECT_EQ(registry.SlotOf("a7"), 7);
  EXPECT_FALSE(registry.Register({"one-too-many"}, &error));
  EXPECT_NE(error.find("8 are taken (a0, a1"), std::string::npos) << error;
}

TEST(AttributeRegistryTest, ConcurrentRegistrationsAgreeOnSlots) {
  AttributeRegistry registry;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&registry, t] {
      std::string error;
      std::vector<std::string> names = {"endpoint", "tenant", "t" + std::to_string(t)};
      EXPECT_TRUE(registry.Register(names, &error)) << error;
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(registry.size(), 6);
  for (int t = 0; t < 4; t++) EXPECT_GE(registry.SlotOf("t" + std::to_string(t)), 0);
  EXPECT_LT(registry.SlotOf("endpoint"), registry.size());
}

struct BadNames {
  std::vector<std::string> names;
  std::string message_part;
};

class AttributeRegistryErrorTest : public testing::TestWithParam<BadNames> {};

TEST_P(AttributeRegistryErrorTest, RejectsWithAClearMessageAndChangesNothing) {
  AttributeRegistry registry;
  std::string error;
  ASSERT_TRUE(registry.Register({"endpoint"}, &error));
  EXPECT_FALSE(registry.Register(GetParam().names, &error));
  EXPECT_NE(error.find(GetParam().message_part), std::string::npos) << error;
  EXPECT_EQ(registry.SlotOf("endpoint"), 0) << "a failed Register changes nothing";
  EXPECT_EQ(registry.size(), 1);
}

INSTANTIATE_TEST_SUITE_P(
    Errors, AttributeRegistryErrorTest,
    testing::Values(BadNames{{"a", "b", "c", "d", "e", "f", "g", "h"}, "register at most 8"},
                    BadNames{{"endpoint", ""}, "attribute #2 is empty"},
                    BadNames{{"tenant", "tenant"}, "'tenant' is listed twice"},
                    BadNames{{"a;b"}, "contains ';'"}, BadNames{{"key=value"}, "contains '='"},
                    BadNames{{"with space"}, "contains ' '"},
                    BadNames{{std::string(65, 'x')}, "at most 64 bytes"}));

}  // namespace
}  // namespace ctxprof
