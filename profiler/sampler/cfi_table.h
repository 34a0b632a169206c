// CfiTable: how to find the caller of any instruction of one loaded object (the executable, a
// shared library, the vDSO), compiled from the object's DWARF call frame information (.eh_frame,
// located through .eh_frame_hdr) into a sorted array of 12-byte rows that a signal handler
// searches without parsing DWARF.
//
// A row says, for every pc from its own up to the next row's: where the canonical frame address
// (CFA: the caller's stack pointer before the call) is, where the return address and the
// caller's frame pointer were saved. What the compiler emits for x86-64 code is covered:
//  * CFA = sp + offset or fp + offset (DW_CFA_def_cfa*, remember/restore_state, advance_loc);
//  * the return address and the frame pointer saved at CFA + offset (DW_CFA_offset*);
//  * the return address undefined (DW_CFA_undefined: glibc's clone3 and _start): the stack's
//    root, where a walk ends complete;
//  * PLT stubs, whose CFA is glibc's and binutils' one DW_CFA_def_cfa_expression form,
//    sp + off + ((pc & 15) >= N ? 8 : 0): recognised byte for byte;
//  * the signal return trampoline (a CIE with the 'S' augmentation whose code is the
//    rt_sigreturn sequence, MachineContext::IsSigreturnTrampoline): the caller's registers are
//    in the kernel's signal frame.
// Anything else (another CFA expression, a CFA in another register, the return address in a
// register, a malformed FDE) compiles to a row that ends the walk, reported truncated. A frame
// pointer restored from something else than a stack slot is marked lost: a caller whose CFA
// depends on it ends the walk the same way.
//
// Memory: sizeof(CfiRow) = 12 bytes per row (a row per CFI location change plus one per gap
// between functions), plus 4 bytes of index per 128 bytes of code.
//
// Thread safety: Build runs off the signal path (it allocates) on memory the loader keeps mapped
// while it runs (CfiRegistry calls it under dl_iterate_phdr). A built table is immutable, so any
// number of threads and signal handlers may call Find concurrently; Find is async-signal-safe
// (reads only the table's own array, no allocation, no lock).
#ifndef CTXPROF_PROFILER_SAMPLER_CFI_TABLE_H_
#define CTXPROF_PROFILER_SAMPLER_CFI_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "profiler/base/status.h"

namespace ctxprof {

// How a row finds the caller's frame.
enum class CfaRule : uint8_t {
  kSp,           // CFA = sp + cfa_offset
  kFp,           // CFA = fp + cfa_offset
  kPltStub,      // CFA = sp + cfa_offset + ((pc & 15) >= fp_offset ? 8 : 0) (fp is untouched)
  kSignalFrame,  // a handler returned here: the caller's registers are in the signal frame
  kOutermost,    // the return address is undefined: the root of the stack, the walk is complete
  kNoInfo,       // no FDE covers this pc (between functions)
  kUnsupported,  // CFI this compiler does not interpret, or a malformed FDE
};

struct CfiRow {
  // Sentinels of fp_offset (a saved register is never at CFA + 0, the caller's own stack).
  static constexpr int16_t kFpUnchanged = 0;     // the caller's fp is the current fp
  static constexpr int16_t kFpLost = INT16_MIN;  // the caller's fp is not recoverable

  uint32_t pc;  // first pc covered, as an offset from the object's load bias
  CfaRule rule;
  int8_t return_address_offset;  // the return address is at CFA + this (x86-64: -8)
  int16_t fp_offset;             // the caller's fp is at CFA + this, or a sentinel above
  int32_t cfa_offset;
};
static_assert(sizeof(CfiRow) == 12, "CfiRow is the unit of the memory bound");

// An address range [start, end).
struct AddressRange {
  uintptr_t start;
  uintptr_t end;
};

// What a lookup reads, in one small block: the registry keeps a copy next to each code range,
// so that a walk touches one line of metadata per object and then the index and the rows.
struct CfiLookup {
  // Find's index: one entry per 2^kBucketShift bytes of the object's code span, so a lookup
  // searches the few rows of one bucket (1.8 on average in libjvm.so), not the whole table.
  static constexpr int kBucketShift = 7;

  uintptr_t bias;                    // the object's load bias: row pcs are relative to it
  uintptr_t first;                   // the first pc any row covers (absolute)
  const CfiRow* rows;                // sorted by pc, no two with the same pc, at least one
  const uint32_t* bucket_first_row;  // [b]: the row covering first + (b << kBucketShift)
  size_t bucket_count;               // bucket_first_row has one more entry: the last row

  // The row covering `pc` (absolute), or nullptr when pc lies before the first row.
  // Async-signal-safe.
  const CfiRow* Find(uintptr_t pc) const;
};

class CfiTable {
 public:
  // Compiles the CFI that `eh_frame_hdr` indexes. `bias` is the object's load bias (dl_phdr_info
  // dlpi_addr); `readable` lists the object's mapped readable ranges: no byte outside them is
  // ever read, so a corrupt table cannot make Build fault. FDEs that cannot be compiled become
  // kUnsupported rows; Build fails (kInvalidArgument saying why) only when the index itself is
  // unusable (unknown version or encoding, no binary search table, out of bounds), has no FDE,
  // or its FDEs span more than 512 MiB of code.
  static StatusOr<std::unique_ptr<CfiTable>> Build(uintptr_t bias, uintptr_t eh_frame_hdr,
                                                   const std::vector<AddressRange>& readable);

  // Valid as long as the table lives.
  CfiLookup lookup() const;
  const CfiRow* Find(uintptr_t pc) const { return lookup().Find(pc); }

  size_t row_count() const { return rows_.size(); }
  size_t memory_bytes() const {
    return sizeof(*this) + rows_.capacity() * sizeof(CfiRow) +
           bucket_first_row_.capacity() * sizeof(uint32_t);
  }

 private:
  explicit CfiTable(uintptr_t bias) : bias_(bias) {}
  void BuildIndex();

  const uintptr_t bias_;
  std::vector<CfiRow> rows_;
  std::vector<uint32_t> bucket_first_row_;
};

inline const CfiRow* CfiLookup::Find(uintptr_t pc) const {
  if (pc < first) return nullptr;
  const size_t bucket = (pc - first) >> kBucketShift;
  // Past the last bucket: the last row (the gap after the last function) covers it.
  if (bucket >= bucket_count) return rows + bucket_first_row[bucket_count];
  // The last row with pc <= offset is between the bucket's first row and the next bucket's:
  // a branch-free halving search over them.
  const uint32_t low = bucket_first_row[bucket];
  const CfiRow* base = rows + low;
  size_t length = bucket_first_row[bucket + 1] - low + 1;
  const uintptr_t offset = pc - bias;
  while (length > 1) {
    const size_t half = length / 2;
    base = base[half].pc <= offset ? base + half : base;
    length -= half;
  }
  return base;
}

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SAMPLER_CFI_TABLE_H_
