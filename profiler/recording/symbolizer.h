// Symbolizer: native addresses -> function names, for the background thread (never a handler).
//
// Sources: /proc/self/maps lists every executable file mapping; each ELF file is read once and
// both .symtab (which has non-exported and static functions, unless the file was stripped) and
// .dynsym are loaded. The load bias of a mapping comes from the PT_LOAD header covering its file
// offset. Names are demangled with abi::__cxa_demangle. An address that no mapping covers
// re-reads /proc/self/maps (a library dlopen'ed since), at most once per kRefreshInterval, so a
// bad address cannot make every lookup re-read the maps; such misses are not cached.
//
// Output for an address no symbol covers: "[<file basename>+0x<file offset>]", or "[unknown]"
// when no mapping covers it.
//
// Thread safety: not thread-safe; the owner serialises calls (the aggregator holds its mutex).
// Memory: symbols of every loaded file stay cached for the Symbolizer's lifetime.
#ifndef CTXPROF_PROFILER_RECORDING_SYMBOLIZER_H_
#define CTXPROF_PROFILER_RECORDING_SYMBOLIZER_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace ctxprof {

class Symbolizer {
 public:
  static constexpr std::chrono::milliseconds kRefreshInterval{500};

  // The function containing `pc`. For a return address (every frame but the leaf) pass
  // `is_return_address` so the call instruction, not the next one, is looked up.
  const std::string& Resolve(uint64_t pc, bool is_return_address);

  // The file name (without folder) of the object mapped at `pc`, or "" when none is; for the
  // JFR "class" of a native frame. Call after Resolve() for the same pc, which refreshes maps.
  std::string ModuleName(uint64_t pc) const;

  // "Foo::bar(int)" for "_ZN3Foo3barEi"; the input when it is not a mangled name.
  static std::string Demangle(const char* name);

 private:
  struct Symbol {
    uint64_t start;
    uint64_t size;
    std::string name;
  };
  struct FileSymbols {
    std::vector<Symbol> symbols;  // sorted by start
    struct Segment {
      uint64_t offset;  // p_offset
      uint64_t vaddr;   // p_vaddr
      uint64_t filesz;
    };
    std::vector<Segment> loads;
  };
  struct Module {
    uint64_t start;
    uint64_t end;
    uint64_t file_offset;
    std::string path;
    const FileSymbols* file;  // nullptr when the file could not be read as ELF
  };

  void RefreshMaps();
  const FileSymbols* LoadFile(const std::string& path);
  const Module* FindModule(uint64_t address) const;
  // The name of `address`; *cacheable is false when no mapping covered it.
  std::string Lookup(uint64_t address, bool* cacheable);

  std::vector<Module> modules_;  // sorted by start
  std::map<std::string, std::unique_ptr<FileSymbols>> files_;
  std::unordered_map<uint64_t, std::string> cache_;  // lookup address -> name
  std::string uncached_;  // the last uncacheable result, returned by reference
  std::chrono::steady_clock::time_point last_refresh_{};
  bool refreshed_once_ = false;
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_RECORDING_SYMBOLIZER_H_
