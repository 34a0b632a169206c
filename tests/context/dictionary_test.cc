#include "context/dictionary.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <thread>
#include <vector>

namespace ctxprof {
namespace {

std::unique_ptr<Dictionary> MakeDictionary(const Dictionary::Options& options) {
  std::string error;
  std::unique_ptr<Dictionary> dictionary = Dictionary::Create(options, &error);
  EXPECT_NE(dictionary, nullptr) << error;
  return dictionary;
}

TEST(DictionaryTest, InternsEachValueOnceWithStableIds) {
  auto dictionary = MakeDictionary({});
  const uint32_t checkout = dictionary->Intern("/checkout");
  const uint32_t search = dictionary->Intern("/search");
  EXPECT_EQ(checkout, Dictionary::kFirstValueId);
  EXPECT_EQ(search, Dictionary::kFirstValueId + 1);
  EXPECT_EQ(dictionary->Intern("/checkout"), checkout);
  EXPECT_EQ(dictionary->Find("/search"), search);
  EXPECT_EQ(dictionary->Find("/missing"), Dictionary::kUnsetId);
  EXPECT_EQ(dictionary->ValueOf(checkout), "/checkout");
  EXPECT_EQ(dictionary->ValueOf(search), "/search");
  EXPECT_EQ(dictionary->size(), 2u);
}

TEST(DictionaryTest, EmptyStringIsAValueNotUnset) {
  auto dictionary = MakeDictionary({});
  const uint32_t id = dictionary->Intern("");
  EXPECT_NE(id, Dictionary::kUnsetId);
  EXPECT_NE(id, Dictionary::kOverflowId);
  EXPECT_EQ(dictionary->ValueOf(id), "");
  EXPECT_EQ(dictionary->Intern(""), id);
}

TEST(DictionaryTest, ReservedAndUnknownIds) {
  auto dictionary = MakeDictionary({});
  EXPECT_EQ(dictionary->ValueOf(Dictionary::kUnsetId), "");
  EXPECT_EQ(dictionary->ValueOf(Dictionary::kOverflowId), Dictionary::kOverflowValue);
  EXPECT_EQ(dictionary->ValueOf(12345), "") << "an id never handed out resolves to nothing";
}

TEST(DictionaryTest, FullByCountReturnsOverflowIdAndCountsIt) {
  Dictionary::Options options;
  options.max_values = 3;
  auto dictionary = MakeDictionary(options);
  EXPECT_EQ(dictionary->Intern("a"), 2u);
  EXPECT_EQ(dictionary->Intern("b"), 3u);
  EXPECT_EQ(dictionary->Intern("c"), 4u);
  EXPECT_EQ(dictionary->Intern("d"), Dictionary::kOverflowId);
  EXPECT_EQ(dictionary->Intern("e"), Dictionary::kOverflowId);
  EXPECT_EQ(dictionary->overflowed_interns(), 2u);
  EXPECT_EQ(dictionary->Intern("b"), 3u) << "known values still resolve when full";
  EXPECT_EQ(dictionary->size(), 3u);
}

TEST(DictionaryTest, FullByBytesReturnsOverflowId) {
  Dictionary::Options options;
  options.max_total_bytes = 10;
  options.max_value_bytes = 8;
  auto dictionary = MakeDictionary(options);
  EXPECT_EQ(dictionary->Intern("12345678"), 2u);
  EXPECT_EQ(dictionary->Intern("12"), 3u);
  EXPECT_EQ(dictionary->Intern("123"), Dictionary::kOverflowId);
  EXPECT_EQ(dictionary->overflowed_interns(), 1u);
}

TEST(DictionaryTest, LongValuesAreTruncatedAtACharacterBoundaryAndCounted) {
  Dictionary::Options options;
  options.max_value_bytes = 8;
  auto dictionary = MakeDictionary(options);
  // "abcdef" + U+00E9 (2 bytes) = 8 bytes: fits exactly.
  const uint32_t exact = dictionary->Intern("abcdef\xC3\xA9");
  EXPECT_EQ(dictionary->ValueOf(exact), "abcdef\xC3\xA9");
  EXPECT_EQ(dictionary->truncated_values(), 0u);
  // "abcdefg" + U+00E9: the limit falls inside the 2-byte character, which is dropped whole.
  const uint32_t cut = dictionary->Intern("abcdefg\xC3\xA9");
  EXPECT_EQ(dictionary->ValueOf(cut), "abcdefg");
  EXPECT_EQ(dictionary->truncated_values(), 1u);
  // "abcde" + U+1F600 (4 bytes): the emoji would end at byte 9, so it goes.
  const uint32_t emoji = dictionary->Intern("abcde\xF0\x9F\x98\x80");
  EXPECT_EQ(dictionary->ValueOf(emoji), "abcde");
  // Two long values sharing the kept prefix become one entry.
  EXPECT_EQ(dictionary->Intern("abcdefg\xC3\xA8"), cut);
  EXPECT_EQ(dictionary->truncated_values(), 3u);
  EXPECT_EQ(dictionary->Find("abcdefg\xE2\x82\xAC"), cut);
}

TEST(DictionaryTest, TruncateUtf8NeverSplitsASequence) {
  const std::string text =
      "a\xE2\x82\xAC"
      "b\xF0\x9F\x98\x80";  // a EURO b GRINNING-FACE
  const size_t expected[] = {0, 1, 1, 1, 4, 5, 5, 5, 5, 9};
  for (size_t limit = 0; limit <= text.size(); limit++) {
    EXPECT_EQ(Dictionary::TruncateUtf8(text, limit).size(), expected[limit]) << limit;
  }
  EXPECT_EQ(Dictionary::TruncateUtf8(text, 100), text);
}

TEST(DictionaryTest, NonAsciiValuesRoundTrip) {
  auto dictionary = MakeDictionary({});
  const std::vector<std::string> values = {"Zürich", "東京", "Δοκιμή", "🙂 tenant", "naïve"};
  std::vector<uint32_t> ids;
  for (const auto& value : values) ids.push_back(dictionary->Intern(value));
  for (size_t i = 0; i < values.size(); i++) {
    EXPECT_EQ(dictionary->ValueOf(ids[i]), values[i]);
    EXPECT_EQ(dictionary->Intern(values[i]), ids[i]);
  }
}

TEST(DictionaryTest, RejectsBadOptionsWithTheNameOfTheOption) {
  std::string error;
  Dictionary::Options options;
  options.max_values = 0;
  EXPECT_EQ(Dictionary::Create(options, &error), nullptr);
  EXPECT_NE(error.find("max_values"), std::string::npos) << error;
  options = {};
  options.max_value_bytes = Dictionary::kMaxValueBytesLimit + 1;
  EXPECT_EQ(Dictionary::Create(options, &error), nullptr);
  EXPECT_NE(error.find("max_value_bytes"), std::string::npos) << error;
  options = {};
  options.max_total_bytes = 16;
  EXPECT_EQ(Dictionary::Create(options, &error), nullptr);
  EXPECT_NE(error.find("max_total_bytes"), std::string::npos) << error;
}

TEST(DictionaryTest, ConcurrentInterningAgreesOnIds) {
  Dictionary::Options options;
  options.max_values = 4096;
  auto dictionary = MakeDictionary(options);
  constexpr int kThreads = 8;
  constexpr int kValues = 2000;
  std::vector<std::vector<uint32_t>> ids(kThreads, std::vector<uint32_t>(kValues));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      // Each thread walks all values (7919 is prime to kValues) from a different start, so
      // inserts of the same value race.
      for (int i = 0; i < kValues; i++) {
        const int value = (i * 7919 + t * 131) % kValues;
        ids[t][value] = dictionary->Intern("value-" + std::to_string(value));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  std::set<uint32_t> distinct;
  for (int value = 0; value < kValues; value++) {
    for (int t = 1; t < kThreads; t++) ASSERT_EQ(ids[t][value], ids[0][value]) << value;
    EXPECT_EQ(dictionary->ValueOf(ids[0][value]), "value-" + std::to_string(value));
    distinct.insert(ids[0][value]);
  }
  EXPECT_EQ(distinct.size(), static_cast<size_t>(kValues));
  EXPECT_EQ(dictionary->size(), static_cast<uint32_t>(kValues));
  EXPECT_EQ(dictionary->overflowed_interns(), 0u);
}

}  // namespace
}  // namespace ctxprof
