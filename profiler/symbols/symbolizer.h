// Symbolizer: native and kernel addresses -> function names, for the background thread (never a
// handler).
//
// User addresses. /proc/self/maps lists every executable mapping:
//  * an ELF file: its .symtab (non-exported and static functions too, unless the file was
//    stripped) and .dynsym are loaded once (elf_symbols.h); a file without a .symtab gets the
//    .symtab of its separate debug file when one is installed (debug_files.h: by build id, or
//    .gnu_debuglink, under /usr/lib/debug), which is how Debian's libc6-dbg names libc's
//    internal functions (the thread root `clone3`, `start_thread`). The load bias comes from the
//    PT_LOAD header covering the mapping's file offset.
//  * the vDSO ("[vdso]"): the symbols of its image in our own memory (getauxval
//    (AT_SYSINFO_EHDR)): `__vdso_clock_gettime`, `__vdso_gettimeofday`... The image keeps only
//    .dynsym; its static functions (e.g. the pvclock reader that __vdso_clock_gettime calls
//    under kvm-clock) are named where a debug file with its build id is installed, else
//    "[vdso+0x780]" (its start).
//  * anonymous executable memory: code generated at run time, in a JVM the code cache (JIT-
//    compiled methods, the interpreter, stubs). A native frame there is named "[jit]": the
//    native walk does not know which Java method it is (async-profiler's walkers stop at such a
//    frame and leave it to the Java walker; it has no name for it either).
// Names are demangled with abi::__cxa_demangle. An address that no mapping covers re-reads
// /proc/self/maps (a library dlopen'ed since), at most once per kRefreshInterval, so a bad
// address cannot make every lookup re-read the maps; such misses are not cached.
//
// Kernel addresses (FrameKind::kKernel): /proc/kallsyms (kernel_symbols.h), the process's one
// table, loaded on the first kernel address.
//
// Output for an address no symbol covers: "[<file basename>+0x<file offset>]" ("[vdso+0x...]"
// in the vDSO), where the offset is that of the start of its function when the object has no
// .symtab and its .eh_frame_hdr lists the function (so that all samples of one unnamed static
// function share a name, e.g. zlib's internal functions), else that of the address; "[unknown]"
// when no mapping covers it; "[kernel]" for a kernel address below every kernel symbol.
//
// Thread safety: not thread-safe; the owner serialises calls (the aggregator holds its mutex).
// Memory: symbols of every loaded file stay cached for the Symbolizer's lifetime (libc with its
// debug file: ~3,000 + 5,000 functions, ~0.5 MB); a debug file is mapped only while it is read.
#ifndef CTXPROF_PROFILER_SYMBOLS_SYMBOLIZER_H_
#define CTXPROF_PROFILER_SYMBOLS_SYMBOLIZER_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "profiler/symbols/debug_files.h"
#include "profiler/symbols/elf_symbols.h"
#include "profiler/symbols/kernel_symbols.h"

namespace ctxprof {

class Symbolizer {
 public:
  static constexpr std::chrono::milliseconds kRefreshInterval{500};

  // `debug_root` is where separate debug files are searched (debug_files.h).
  explicit Symbolizer(std::string debug_root = kDebugFileRoot)
      : debug_root_(std::move(debug_root)) {}

  // The function containing `pc`. For a return address (every frame but the leaf) pass
  // `is_return_address` so the call instruction, not the next one, is looked up.
  const std::string& Resolve(uint64_t pc, bool is_return_address);
  // The same for a kernel address.
  const std::string& ResolveKernel(uint64_t pc, bool is_return_address);

  // Reads /proc/self/maps and the symbols of every object mapped now, as the first lookup would;
  // for a caller that wants that cost paid on its own thread.
  void LoadMappedObjects() { RefreshMaps(); }

  // The file name (without folder) of the object mapped at `pc`, "[vdso]" or "[jit]", or ""
  // when none is; for the JFR "class" of a native frame. Call after Resolve() for the same pc,
  // which refreshes maps.
  std::string ModuleName(uint64_t pc) const;

  // "Foo::bar(int)" for "_ZN3Foo3barEi"; the input when it is not a mangled name.
  static std::string Demangle(const char* name);

 private:
  struct Module {
    uint64_t start;
    uint64_t end;
    uint64_t file_offset;
    std::string path;           // a file, "[vdso]" or "[jit]"
    const ElfSymbols* symbols;  // nullptr when there are none (not ELF, unreadable, "[jit]")
  };

  void RefreshMaps();
  const ElfSymbols* LoadFile(const std::string& path);
  const ElfSymbols* LoadVdso(uint64_t start, uint64_t end);
  const Module* FindModule(uint64_t address) const;
  // The name of `address`; *cacheable is false when no mapping covered it.
  std::string Lookup(uint64_t address, bool* cacheable);

  const std::string debug_root_;
  std::vector<Module> modules_;  // sorted by start
  std::map<std::string, std::unique_ptr<ElfSymbols>> files_;
  std::unique_ptr<ElfSymbols> vdso_;
  bool vdso_loaded_ = false;
  std::unordered_map<uint64_t, std::string> cache_;  // lookup address -> name
  std::string uncached_;  // the last uncacheable result, returned by reference
  std::chrono::steady_clock::time_point last_refresh_{};
  bool refreshed_once_ = false;
  std::shared_ptr<const KernelSymbols> kernel_;             // loaded on the first kernel address
  std::unordered_map<uint64_t, std::string> kernel_cache_;  // lookup address -> name
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SYMBOLS_SYMBOLIZER_H_
