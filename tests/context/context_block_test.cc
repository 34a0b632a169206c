#include "context/context_block.h"

#include <gtest/gtest.h>

#include <cstring>

namespace ctxprof {
namespace {

TEST(ContextLayoutTest, MatchesTheDocumentedOffsets) {
  EXPECT_EQ(kContextLayout.block_size, 64u);
  EXPECT_EQ(kContextLayout.sequence_offset, 0u);
  EXPECT_EQ(kContextLayout.trace_id_high_offset, 8u);
  EXPECT_EQ(kContextLayout.trace_id_low_offset, 16u);
  EXPECT_EQ(kContextLayout.span_id_offset, 24u);
  EXPECT_EQ(kContextLayout.attributes_offset, 32u);
  EXPECT_EQ(kContextLayout.attribute_size, 4u);
  EXPECT_GE(kContextLayout.attribute_slots, 8u);
  EXPECT_LE(kContextLayout.attributes_offset +
                kContextLayout.attribute_size * kContextLayout.attribute_slots,
            kContextLayout.block_size);
}

TEST(ContextLayoutTest, FieldsAreStoredLittleEndianWhereTheLayoutSays) {
  ContextBlock block{};
  {
    BlockWriter writer(&block);
    writer.SetTraceId(0x1122334455667788ull, 0x99aabbccddeeff00ull);
    writer.SetSpanId(0x0123456789abcdefull);
    writer.SetAttribute(7, 0xdeadbeef);
  }
  unsigned char bytes[64];
  memcpy(bytes, &block, sizeof(bytes));
  uint64_t value;
  memcpy(&value, bytes + kContextLayout.trace_id_high_offset, 8);
  EXPECT_EQ(value, 0x1122334455667788ull);
  memcpy(&value, bytes + kContextLayout.trace_id_low_offset, 8);
  EXPECT_EQ(value, 0x99aabbccddeeff00ull);
  memcpy(&value, bytes + kContextLayout.span_id_offset, 8);
  EXPECT_EQ(value, 0x0123456789abcdefull);
  uint32_t attribute;
  memcpy(&attribute, bytes + kContextLayout.attributes_offset + 7 * 4, 4);
  EXPECT_EQ(attribute, 0xdeadbeefu);
  memcpy(&value, bytes + kContextLayout.sequence_offset, 8);
  EXPECT_EQ(value, 2u) << "one completed write moves the sequence by two";
}

TEST(SeqlockTest, ReadReturnsTheLastCompletedWrite) {
  ContextBlock block{};
  ContextSnapshot snapshot;
  ASSERT_EQ(ReadBlock(block, &snapshot, 1), ReadStatus::kConsistent);
  EXPECT_TRUE(snapshot.empty());

  ContextSnapshot written{};
  written.trace_id_high = 1;
  written.trace_id_low = 2;
  written.span_id = 3;
  for (int i = 0; i < kAttributeSlots; i++) written.attributes[i] = 10 + i;
  BlockWriter(&block).SetAll(written);
  ASSERT_EQ(ReadBlock(block, &snapshot, 1), ReadStatus::kConsistent);
  EXPECT_EQ(snapshot, written);
  EXPECT_FALSE(snapshot.empty());

  BlockWriter(&block).SetAttribute(3, 99);
  written.attributes[3] = 99;
  ASSERT_EQ(ReadBlock(block, &snapshot, 1), ReadStatus::kConsistent);
  EXPECT_EQ(snapshot, written);

  BlockWriter(&block).Clear();
  ASSERT_EQ(ReadBlock(block, &snapshot, 1), ReadStatus::kConsistent);
  EXPECT_TRUE(snapshot.empty());
  EXPECT_EQ(block.sequence.load(), 6u) << "three completed writes";
}

TEST(SeqlockTest, AReaderInsideAWriteReportsBusyAndReturnsNothing) {
  ContextBlock block{};
  BlockWriter(&block).SetSpanId(42);
  BlockWriter writer(&block);  // a write in progress, as a signal handler would interrupt it
  writer.SetSpanId(43);
  ContextSnapshot snapshot;
  snapshot.span_id = 7;
  EXPECT_EQ(ReadBlock(block, &snapshot, kSameThreadReadAttempts), ReadStatus::kBusy);
  EXPECT_TRUE(snapshot.empty()) << "a failed read must not leak a half-written value";
  EXPECT_EQ(ReadBlock(block, &snapshot, kOtherThreadReadAttempts), ReadStatus::kBusy);
  EXPECT_TRUE(snapshot.empty());
}

TEST(ContextSnapshotTest, EqualityCoversEveryField) {
  ContextSnapshot a{};
  ContextSnapshot b{};
  EXPECT_EQ(a, b);
  b.attributes[kAttributeSlots - 1] = 1;
  EXPECT_NE(a, b);
  b = a;
  b.trace_id_low = 1;
  EXPECT_NE(a, b);
  b = a;
  b.span_id = 1;
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace ctxprof
