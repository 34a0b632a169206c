// ElfImage and ElfSymbols: the function symbols of ELF64 objects, for the Symbolizer
// (symbolizer.h; background thread only, never a signal handler).
//
// ElfImage is a read-only, bounds-checked view of one ELF64 image: a whole file mapped with mmap
// (unmapped on destruction), or an image the process already has mapped (the vDSO, whose start
// getauxval(AT_SYSINFO_EHDR) gives). Every read goes through At(offset, length), null outside the
// image, so a truncated or corrupt file yields fewer symbols, never a read past the image.
//
// ElfSymbols collects the function symbols (STT_FUNC and STT_GNU_IFUNC, defined, at a non-zero
// address) of the symbol tables it is given (.symtab: every function, static ones too, unless
// the file was stripped; .dynsym: the exported ones; possibly from a separate debug file,
// debug_files.h) and answers "which function contains this address". Names are as the file
// has them, without a symbol version ("clock_gettime@@GLIBC_2.17" in a .symtab is
// "clock_gettime"). Aliases, several names for one address, resolve to one name (BetterAlias):
// glibc's `__clone3`/`clone3` is `clone3`, `__GI___clock_nanosleep`/`__clock_nanosleep`/
// `clock_nanosleep@@GLIBC_2.17` is `clock_nanosleep`, the vDSO's `clock_gettime` (weak) /
// `__vdso_clock_gettime` is `__vdso_clock_gettime`.
//
// Thread safety: none; an ElfSymbols is immutable after Finish() and may then be read from any
// thread.
#ifndef CTXPROF_PROFILER_SYMBOLS_ELF_SYMBOLS_H_
#define CTXPROF_PROFILER_SYMBOLS_ELF_SYMBOLS_H_

#include <elf.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ctxprof {

class ElfImage {
 public:
  // The file at `path` mapped read-only; null when it cannot be read or is not an ELF64 image.
  static std::unique_ptr<ElfImage> Open(const std::string& path);
  // `size` bytes at `start`, which the caller keeps mapped and readable for the image's life;
  // null when they are not an ELF64 image.
  static std::unique_ptr<ElfImage> InMemory(const char* start, size_t size);
  ~ElfImage();
  ElfImage(const ElfImage&) = delete;
  ElfImage& operator=(const ElfImage&) = delete;

  // [offset, offset + length) of the image, or null when any of it is outside.
  const char* At(uint64_t offset, uint64_t length) const;
  const Elf64_Ehdr& header() const { return header_; }
  // The section headers (empty when the table is outside the image) and the program headers.
  const std::vector<Elf64_Shdr>& sections() const { return sections_; }
  std::vector<Elf64_Phdr> ProgramHeaders() const;
  // The first section of `type` named `name`, or null.
  const Elf64_Shdr* FindSection(uint32_t type, std::string_view name) const;
  bool HasSection(uint32_t type) const;
  // The bytes of the NT_GNU_BUILD_ID note, "" when the image has none.
  std::string BuildId() const;
  // The .gnu_debuglink section: the debug file's name and the CRC-32 of its contents. False
  // when the image has none.
  bool DebugLink(std::string* name, uint32_t* crc) const;
  // The whole image (for a CRC-32).
  const char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  ElfImage(const char* data, size_t size, bool owned);
  bool Parse();

  const char* data_;
  size_t size_;
  bool owned_;  // mapped by Open, unmapped by the destructor
  Elf64_Ehdr header_{};
  std::vector<Elf64_Shdr> sections_;
};

class ElfSymbols {
 public:
  // Where the object's PT_LOAD segments put file offsets in its address space. Take them from
  // the object that is mapped, not from a debug file.
  void ReadSegments(const ElfImage& image);
  // Adds the function symbols of `image`'s sections of `section_type` (SHT_SYMTAB or
  // SHT_DYNSYM). The addresses must be in the same address space as the segments: true for
  // an object and its separate debug file.
  void AddFunctions(const ElfImage& image, uint32_t section_type);
  // Adds the start of every function that `image`'s .eh_frame_hdr search table lists (the
  // unwind info of code with or without symbols), for FunctionStartAt. For objects without a
  // .symtab: their static functions then have a start if not a name.
  void AddUnwindStarts(const ElfImage& image);
  // Sorts and keeps one name per address; call once, after the Add calls.
  void Finish();

  // The object's virtual address of `file_offset`; false when no PT_LOAD covers it.
  bool VirtualAddressOf(uint64_t file_offset, uint64_t* address) const;
  // The (mangled) name of the function containing virtual address `address`, or null. A symbol
  // without a size covers the addresses up to the next symbol.
  const std::string* FunctionAt(uint64_t address) const;
  // The start of the function containing `address` by the unwind table (AddUnwindStarts):
  // the last listed start at or below it. False when none is.
  bool FunctionStartAt(uint64_t address, uint64_t* start) const;
  size_t function_count() const { return functions_.size(); }

 private:
  struct Segment {
    uint64_t offset;
    uint64_t vaddr;
    uint64_t filesz;
  };
  struct Function {
    uint64_t start;
    uint64_t size;
    std::string name;
    int binding_rank;  // BindingRank of its symbol
  };

  std::vector<Segment> segments_;
  std::vector<Function> functions_;      // sorted by start after Finish()
  std::vector<uint64_t> unwind_starts_;  // sorted after Finish()
};

// The rank of a symbol binding for BetterAlias: global 0, weak 1, local and others 2.
int BindingRank(unsigned char binding);

// True when `a` (a symbol of binding rank `a_rank`) is a better name than `b` for the same
// address: the lower rank (a public name over an internal alias), then fewer leading
// underscores, then the shorter name, then the smaller in byte order (deterministic).
bool BetterAlias(std::string_view a, int a_rank, std::string_view b, int b_rank);

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SYMBOLS_ELF_SYMBOLS_H_
