// KernelSymbols: names of kernel frames (FrameKind::kKernel, perf_callchain.h) from
// /proc/kallsyms. Background thread only, never a signal handler.
//
// What is read: the text symbols (types t, T, w, W) with a non-zero address, the kernel's and
// its modules' (a module symbol's "[module]" column is dropped), sorted by address; aliases at
// one address resolve to one name (elf_symbols.h BetterAlias: global before local, fewer
// leading underscores, shorter). kallsyms has no sizes, so an address belongs to the symbol at
// or below it. Kernel frames are named without a "_[k]" suffix; the JFR frame type (Kernel) and
// the dump's suffix say what they are.
//
// Visibility: the kernel shows real addresses only to readers it allows (kptr_restrict = 0
// with perf_event_paranoid <= 1, or CAP_SYSLOG); others read zeros. AddressesVisible() checks
// this before a session asks for kernel frames, so frames without names are never recorded.
//
// Memory: ~12 bytes per symbol plus the names (sizes and load time: docs/SAMPLER.md,
// "Symbolizer"). Shared() keeps one table per process while anyone holds it (the
// aggregator's and the JFR writer's symbolizers share it, and a session whose CPU engine
// records kernel frames into a recording holds it from its start: profiler/session/session.h),
// loaded by the first holder, freed with the last. A module loaded after that is not in the table:
// its addresses get the name of the symbol below them until the table is loaded again (the next
// session).
//
// Thread safety: a KernelSymbols is immutable once loaded; Shared() is thread-safe.
#ifndef CTXPROF_PROFILER_SYMBOLS_KERNEL_SYMBOLS_H_
#define CTXPROF_PROFILER_SYMBOLS_KERNEL_SYMBOLS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "profiler/base/status.h"

namespace ctxprof {

inline constexpr char kKallsymsPath[] = "/proc/kallsyms";

class KernelSymbols {
 public:
  // The symbols of `path` (kallsyms format); empty when it cannot be read.
  static std::unique_ptr<KernelSymbols> Load(const std::string& path);
  // The process's table of /proc/kallsyms, loaded when no one holds it.
  static std::shared_ptr<const KernelSymbols> Shared();
  // Ok when /proc/kallsyms shows this process non-zero addresses; otherwise kUnavailable saying
  // why (with the errno when the file cannot be read).
  static Status CheckAddressesVisible();

  // The function containing `address` ("do_syscall_64"), or "[kernel]" below the first symbol.
  std::string Resolve(uint64_t address) const;
  size_t size() const { return addresses_.size(); }

 private:
  std::vector<uint64_t> addresses_;     // sorted
  std::vector<uint32_t> name_offsets_;  // into names_, parallel to addresses_
  std::string names_;                   // NUL-separated
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SYMBOLS_KERNEL_SYMBOLS_H_
