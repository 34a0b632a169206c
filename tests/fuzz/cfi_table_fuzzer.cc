// libFuzzer target for the unwind table compiler (profiler/sampler/cfi_table.h): CfiTable::Build
// on an arbitrary image whose first bytes are read as .eh_frame_hdr, the whole input being the
// object's only readable memory (ASan catches any read outside it). Beyond "no crash" it checks
// what the signal handler relies on: rows strictly sorted by pc, a bucket index that brackets
// every lookup, and Find returning the last row at or before the pc.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "profiler/sampler/cfi_table.h"

namespace ctxprof {
namespace {

void Check(bool condition, const char* invariant) {
  if (condition) return;
  fprintf(stderr, "invariant violated: %s\n", invariant);
  abort();
}

void CheckTable(const CfiTable& table) {
  const CfiLookup lookup = table.lookup();
  const size_t rows = table.row_count();
  Check(rows > 0, "a built table has rows");
  for (size_t i = 1; i < rows; ++i) {
    Check(lookup.rows[i - 1].pc < lookup.rows[i].pc, "rows strictly sorted by pc");
  }
  Check(lookup.rows[rows - 1].rule == CfaRule::kNoInfo, "the last row is the gap after code");
  Check(lookup.first == lookup.bias + lookup.rows[0].pc, "first is the first row's pc");
  Check(lookup.bucket_first_row[lookup.bucket_count] == rows - 1, "the index ends at the last row");
  // Every row's own pc, and the byte before it, finds the right row.
  for (size_t i = 0; i < rows; ++i) {
    const uintptr_t pc = lookup.bias + lookup.rows[i].pc;
    Check(lookup.Find(pc) == &lookup.rows[i], "Find(row pc) is that row");
    if (i > 0) Check(lookup.Find(pc - 1) == &lookup.rows[i - 1], "Find(pc - 1) is the row before");
  }
  Check(lookup.Find(lookup.first - 1) == nullptr || lookup.first == 0, "nothing before the first");
}

}  // namespace
}  // namespace ctxprof

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A copy in memory of its own (heap: ASan-guarded on both sides). The bias is 2 GiB below it,
  // so that FDEs of a real library's tables (the seeds: its .eh_frame_hdr and .eh_frame, copied
  // as they lie in the file) point at code that fits the table's 32-bit offsets.
  std::unique_ptr<uint8_t[]> image(new uint8_t[size + 1]);
  memcpy(image.get(), data, size);
  const uintptr_t start = reinterpret_cast<uintptr_t>(image.get());
  const uintptr_t bias = start > (uintptr_t{1} << 31) ? start - (uintptr_t{1} << 31) : 0;
  const ctxprof::StatusOr<std::unique_ptr<ctxprof::CfiTable>> table =
      ctxprof::CfiTable::Build(bias, start, {{start, start + size}});
  if (!table.ok()) {
    ctxprof::Check(!table.status().message().empty(), "a refused image says why");
  } else {
    ctxprof::CheckTable(*table.value());
  }
  return 0;
}
