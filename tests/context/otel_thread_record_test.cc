// The OTEP 4947 record writer and the record pool (context/otel_thread_record.h); the records as
// another process reads them are checked by tests/otel.
#include "context/otel_thread_record.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <string>
#include <string_view>
#include <thread>

#include "context/process_context.h"
#include "context/thread_context.h"

extern "C" __thread ctxprof::OtelThreadRecord* otel_thread_ctx_v1;

namespace ctxprof {
namespace {

// The entries of `record` as "key=value;..." (the OTEP's decoding: last one wins, stop at a
// partial entry).
std::string Entries(const OtelThreadRecord& record) {
  std::string text;
  for (size_t i = 0; i + 2 <= record.attrs_data_size;) {
    const size_t length = record.attrs_data[i + 1];
    if (i + 2 + length > record.attrs_data_size) break;
    text += (text.empty() ? "" : ";") + std::to_string(record.attrs_data[i]) + "=" +
            std::string(reinterpret_cast<const char*>(record.attrs_data) + i + 2, length);
    i += 2 + length;
  }
  return text;
}

TEST(OtelThreadRecordTest, WritesIdsInW3cOrderAndOneEntryPerSetSlot) {
  OtelThreadRecord record{};
  ContextSnapshot context{};
  context.trace_id_high = 0x4bf92f3577b34da6;
  context.trace_id_low = 0xa3ce929d0e0e4736;
  context.span_id = 0x00f067aa0ba902b7;
  context.attributes[0] = 5;
  context.attributes[3] = 9;
  std::string_view values[kAttributeSlots] = {"/checkout", "", "", "acme"};
  WriteOtelRecord(context, values, &record);
  EXPECT_EQ(record.valid, 1);
  const uint8_t trace[16] = {0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6,
                             0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36};
  const uint8_t span[8] = {0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7};
  EXPECT_EQ(memcmp(record.trace_id, trace, 16), 0);
  EXPECT_EQ(memcmp(record.span_id, span, 8), 0);
  EXPECT_EQ(record.trace_flags, 0);
  EXPECT_EQ(Entries(record), "0=/checkout;3=acme");
  EXPECT_EQ(record.attrs_data_size, 2 + 9 + 2 + 4);
}

TEST(OtelThreadRecordTest, AnEmptyContextIsInvalid) {
  OtelThreadRecord record{};
  record.valid = 1;
  std::string_view values[kAttributeSlots];
  WriteOtelRecord(ContextSnapshot{}, values, &record);
  EXPECT_EQ(record.valid, 0);
}

TEST(OtelThreadRecordTest, CutsValuesAt255BytesOnACharacterBoundary) {
  OtelThreadRecord record{};
  ContextSnapshot context{};
  context.attributes[0] = 2;
  // 254 ASCII bytes then a 2-byte character: 256 bytes, cut before the character.
  const std::string value = std::string(254, 'a') + "\xc3\xa9";
  std::string_view values[kAttributeSlots] = {value};
  WriteOtelRecord(context, values, &record);
  EXPECT_EQ(record.valid, 1);
  EXPECT_EQ(Entries(record), "0=" + std::string(254, 'a'));
}

TEST(OtelThreadRecordTest, LeavesOutValuesThatDoNotFit) {
  OtelThreadRecord record{};
  ContextSnapshot context{};
  const std::string value(250, 'v');
  std::string_view values[kAttributeSlots];
  for (int slot = 0; slot < kAttributeSlots; slot++) {
    context.attributes[slot] = 2;
    values[slot] = value;
  }
  WriteOtelRecord(context, values, &record);
  // 612 bytes hold two 252-byte entries; the third and later are left out.
  EXPECT_EQ(record.attrs_data_size, 2 * 252);
  EXPECT_EQ(Entries(record), "0=" + value + ";1=" + value);
}

TEST(OtelRecordPoolTest, ClaimPublishesThePointerAndReleaseClearsIt) {
  void* memory = mmap(nullptr, OtelRecordPool::kBytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(memory, MAP_FAILED);
  auto* pool = new OtelRecordPool(memory);
  EXPECT_FALSE(pool->enabled());
  pool->Enable();
  EXPECT_TRUE(pool->enabled());
  std::thread([pool] {
    EXPECT_EQ(otel_thread_ctx_v1, nullptr);
    OtelThreadRecord* record = pool->Claim();
    ASSERT_NE(record, nullptr);
    EXPECT_EQ(otel_thread_ctx_v1, record);
    // Not record 0: its `valid` byte is the pool's flag.
    EXPECT_NE(reinterpret_cast<char*>(record), pool->base());
    record->valid = 1;
    pool->Release(record);
    EXPECT_EQ(otel_thread_ctx_v1, nullptr);
    OtelThreadRecord* again = pool->Claim();
    EXPECT_EQ(again, record);  // reused, and invalid until its new owner writes it
    EXPECT_EQ(again->valid, 0);
    pool->Release(again);
  }).join();
  delete pool;
  munmap(memory, OtelRecordPool::kBytes);
}

// Threads that write a context and exit without OnThreadEnd (native threads of the C API) give
// their records back: more of them than the pool holds all get one.
TEST(OtelThreadRecordTest, ThreadsWithoutTheEndHookGiveTheirRecordBack) {
  std::string error;
  ProcessContext* store = ProcessContext::Get(&error);
  ASSERT_NE(store, nullptr) << error;
  ASSERT_TRUE(store->PublishOtel({{"service.name", "otel-thread-record-test"}}, &error)) << error;
  const uint64_t failures = store->map().otel_records().claim_failures();
  for (size_t i = 0; i < OtelRecordPool::kRecords + 100; i++) {
    std::thread([] {
      ASSERT_EQ(ThreadContext::SetTrace(1, 2, 3), ContextWrite::kWritten);
      ASSERT_NE(otel_thread_ctx_v1, nullptr);
      EXPECT_EQ(otel_thread_ctx_v1->valid, 1);
    }).join();
  }
  EXPECT_EQ(store->map().otel_records().claim_failures(), failures);
}

}  // namespace
}  // namespace ctxprof
