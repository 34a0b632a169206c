// CfiRegistry: the unwind tables (cfi_table.h) of every object loaded in the process, published
// to signal handlers lock-free.
//
// Writers: Refresh(), off the signal path (StackWalker::Init at session start, the session's
// background thread every Session::kDrainInterval through StackWalker::RefreshTables), serialised
// by a mutex only writers take. It asks the loader (dl_iterate_phdr) whether objects were loaded
// or unloaded since the last scan (glibc's dlpi_adds/dlpi_subs counters: one cheap call), and
// only then scans: each object with a PT_GNU_EH_FRAME segment gets a CfiTable, built once and
// reused by later scans while the object stays loaded (keyed by path, load bias and the address
// and first words of its .eh_frame_hdr). Tables are built inside the dl_iterate_phdr callback,
// where the loader lock keeps the object mapped (a dlclose on another thread waits; building
// libjvm.so's table takes tens of ms). The scan yields an immutable Snapshot: the executable
// address ranges (PT_LOAD segments with PF_X) sorted by start, each with its object's table.
//
// Readers: a Reader (a signal handler's stack walk, or any thread) pins the current snapshot for
// its lifetime. A pc in no range ("unknown object": JIT code, an object loaded after the last
// scan, an object without .eh_frame_hdr) finds no row; the walk ends there. An object loaded
// after the last scan is found by the next scan, within one drain interval while a session runs.
//
// Memory orders and retirement. Publication: the writer fills a Snapshot, then exchanges the
// published pointer (seq_cst; its release half publishes the contents); a Reader loads it
// (seq_cst; the acquire half pairs with that store), so it sees a complete snapshot, the new or
// the previous one, never a torn one. A Reader increments `readers` before loading the pointer
// and decrements it when done (both seq_cst). The replaced snapshot (and the tables only it
// referenced) is retired, and a writer frees retired snapshots only when, after the exchange,
// it loads `readers` == 0 (seq_cst). Why that is safe: all these operations are seq_cst, so they
// have one total order. A Reader that holds the old pointer loaded it before the exchange (else
// it would have loaded the new one) and incremented `readers` before that. If the writer's later
// load returns 0, that Reader's decrement is ordered before the load as well (the increment is,
// and a count of 0 leaves no room for it to be pending), and the decrement's release / the
// load's acquire make all of the Reader's reads of the old snapshot happen before the free.
// While walks are always in flight somewhere, retired snapshots wait for a quiet moment (they
// accumulate only with library loads and unloads).
// Cost: every walk does two atomic read-modify-writes on the one `readers` line, which bounces
// between CPUs when many threads are sampled at once (~0.1 us each way); fine at profiling
// rates. A Reader never blocks, allocates or locks. A fault during the walk (FaultGuard's
// siglongjmp) would skip a destructor: keep the Reader outside the guarded region.
//
// Memory bound: the tables of the objects loaded at the last scan (CfiTable: 12 bytes per row)
// plus 56 bytes per executable segment, plus retired snapshots until they are freed.
#ifndef CTXPROF_PROFILER_SAMPLER_CFI_REGISTRY_H_
#define CTXPROF_PROFILER_SAMPLER_CFI_REGISTRY_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "profiler/sampler/cfi_table.h"

namespace ctxprof {

class CfiRegistry {
 public:
  struct CodeRange {
    uintptr_t start;
    uintptr_t end;
    CfiLookup lookup;  // of a table in Snapshot::tables
  };
  struct Snapshot {
    std::vector<CodeRange> ranges;                        // sorted by start, disjoint
    std::vector<std::shared_ptr<const CfiTable>> tables;  // owns what `ranges` points to
  };

  struct Stats {
    size_t objects = 0;         // objects with a table in the current snapshot
    size_t rows = 0;            // their rows
    size_t table_bytes = 0;     // their memory, with the snapshot's own
    size_t failed_objects = 0;  // objects whose .eh_frame_hdr could not be used
    uint64_t scans = 0;         // full scans since process start
    size_t retired_snapshots = 0;
  };

  // Rescans the loaded objects if the loader reports a change since the last scan (always on
  // the first call). Not async-signal-safe; thread-safe (writers are serialised).
  static void Refresh();
  // The same, unconditionally: for tests that must not depend on the loader's counters.
  static void ForceRescan();
  static Stats stats();

  // Pins the current snapshot. Async-signal-safe; may nest (a handler interrupting a walk).
  class Reader {
   public:
    Reader();
    ~Reader();
    Reader(const Reader&) = delete;
    Reader& operator=(const Reader&) = delete;

    // The row for `pc` (absolute), or nullptr when no scanned object's code covers it.
    const CfiRow* Find(uintptr_t pc);

   private:
    const Snapshot* snapshot_;
    const CodeRange* last_ = nullptr;  // the range of the previous Find
  };
};

inline const CfiRow* CfiRegistry::Reader::Find(uintptr_t pc) {
  // Consecutive frames are mostly in one object: try the last one first.
  if (last_ == nullptr || pc - last_->start >= last_->end - last_->start) {
    if (snapshot_ == nullptr || snapshot_->ranges.empty()) return nullptr;
    // The last range starting at or before pc; a branch-free halving search.
    const CodeRange* base = snapshot_->ranges.data();
    size_t length = snapshot_->ranges.size();
    while (length > 1) {
      const size_t half = length / 2;
      base = base[half].start <= pc ? base + half : base;
      length -= half;
    }
    if (pc < base->start || pc >= base->end) return nullptr;
    last_ = base;
  }
  return last_->lookup.Find(pc);
}

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SAMPLER_CFI_REGISTRY_H_
