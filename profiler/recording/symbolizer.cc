#include "profiler/recording/symbolizer.h"

#include <cxxabi.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace ctxprof {
namespace {

// Read-only view of a whole file; unmapped on destruction.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat info;
    if (fstat(fd, &info) == 0 && info.st_size > 0) {
      void* data = mmap(nullptr, static_cast<size_t>(info.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (data != MAP_FAILED) {
        data_ = static_cast<const char*>(data);
        size_ = static_cast<size_t>(info.st_size);
      }
    }
    close(fd);
  }
  ~MappedFile() {
    if (data_ != nullptr) munmap(const_cast<char*>(data_), size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // A pointer to [offset, offset + length) or nullptr when out of bounds.
  const char* At(uint64_t offset, uint64_t length) const {
    if (data_ == nullptr || offset > size_ || length > size_ - offset) return nullptr;
    return data_ + offset;
  }

 private:
  const char* data_ = nullptr;
  size_t size_ = 0;
};

void AddSymbols(const MappedFile& file, const Elf64_Ehdr& header, const Elf64_Shdr* sections,
                uint32_t symbol_type,
                std::vector<std::pair<uint64_t, std::pair<uint64_t, std::string>>>* out) {
  for (int i = 0; i < header.e_shnum; ++i) {
    const Elf64_Shdr& table = sections[i];
    if (table.sh_type != symbol_type || table.sh_entsize != sizeof(Elf64_Sym)) continue;
    if (table.sh_link >= header.e_shnum) continue;
    const Elf64_Shdr& strings = sections[table.sh_link];
    const char* names = file.At(strings.sh_offset, strings.sh_size);
    const char* symbols = file.At(table.sh_offset, table.sh_size);
    if (names == nullptr || symbols == nullptr) continue;
    const size_t count = table.sh_size / sizeof(Elf64_Sym);
    for (size_t s = 0; s < count; ++s) {
      Elf64_Sym symbol;
      memcpy(&symbol, symbols + s * sizeof(Elf64_Sym), sizeof(symbol));
      const int type = ELF64_ST_TYPE(symbol.st_info);
      if ((type != STT_FUNC && type != STT_GNU_IFUNC) || symbol.st_value == 0 ||
          symbol.st_shndx == SHN_UNDEF || symbol.st_name >= strings.sh_size) {
        continue;
      }
      const char* name = names + symbol.st_name;
      const size_t length = strnlen(name, strings.sh_size - symbol.st_name);
      out->push_back({symbol.st_value, {symbol.st_size, std::string(name, length)}});
    }
  }
}

}  // namespace

std::string Symbolizer::Demangle(const char* name) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || demangled == nullptr) return name;
  std::string result(demangled);
  free(demangled);
  return result;
}

const Symbolizer::FileSymbols* Symbolizer::LoadFile(const std::string& path) {
  auto found = files_.find(path);
  if (found != files_.end()) return found->second.get();
  std::unique_ptr<FileSymbols> loaded;
  MappedFile file(path);
  const char* header_bytes = file.At(0, sizeof(Elf64_Ehdr));
  Elf64_Ehdr header;
  if (header_bytes != nullptr) memcpy(&header, header_bytes, sizeof(header));
  if (header_bytes != nullptr && memcmp(header.e_ident, ELFMAG, SELFMAG) == 0 &&
      header.e_ident[EI_CLASS] == ELFCLASS64 && header.e_shentsize == sizeof(Elf64_Shdr) &&
      header.e_phentsize == sizeof(Elf64_Phdr)) {
    loaded = std::make_unique<FileSymbols>();
    const char* program_headers =
        file.At(header.e_phoff, static_cast<uint64_t>(header.e_phnum) * sizeof(Elf64_Phdr));
    for (int i = 0; program_headers != nullptr && i < header.e_phnum; ++i) {
      Elf64_Phdr segment;
      memcpy(&segment, program_headers + i * sizeof(Elf64_Phdr), sizeof(segment));
      if (segment.p_type == PT_LOAD) {
        loaded->loads.push_back({segment.p_offset, segment.p_vaddr, segment.p_filesz});
      }
    }
    const char* section_bytes =
        file.At(header.e_shoff, static_cast<uint64_t>(header.e_shnum) * sizeof(Elf64_Shdr));
    if (section_bytes != nullptr) {
      std::vector<Elf64_Shdr> sections(header.e_shnum);
      memcpy(sections.data(), section_bytes, sections.size() * sizeof(Elf64_Shdr));
      std::vector<std::pair<uint64_t, std::pair<uint64_t, std::string>>> raw;
      AddSymbols(file, header, sections.data(), SHT_SYMTAB, &raw);
      AddSymbols(file, header, sections.data(), SHT_DYNSYM, &raw);
      std::sort(raw.begin(), raw.end(), [](const auto& a, const auto& b) {
        // At equal addresses prefer the sized symbol, then the shorter (non-versioned) name.
        if (a.first != b.first) return a.first < b.first;
        return a.second.first > b.second.first;
      });
      for (auto& entry : raw) {
        if (!loaded->symbols.empty() && loaded->symbols.back().start == entry.first) continue;
        loaded->symbols.push_back(
            {entry.first, entry.second.first, std::move(entry.second.second)});
      }
    }
  }
  const FileSymbols* result = loaded.get();
  files_[path] = std::move(loaded);
  return result;
}

void Symbolizer::RefreshMaps() {
  last_refresh_ = std::chrono::steady_clock::now();
  refreshed_once_ = true;
  std::ifstream maps("/proc/self/maps");
  std::vector<Module> modules;
  std::string line;
  while (std::getline(maps, line)) {
    uint64_t start = 0, end = 0, offset = 0;
    char permissions[8] = {0};
    int path_start = 0;
    if (sscanf(line.c_str(), "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %n", &start, &end,
               permissions, &offset, &path_start) < 4) {
      continue;
    }
    if (permissions[2] != 'x' || path_start <= 0 ||
        static_cast<size_t>(path_start) >= line.size()) {
      continue;
    }
    std::string path = line.substr(static_cast<size_t>(path_start));
    if (path.empty() || path[0] != '/') continue;  // [vdso], [stack], anonymous JIT code
    modules.push_back({start, end, offset, path, LoadFile(path)});
  }
  std::sort(modules.begin(), modules.end(),
            [](const Module& a, const Module& b) { return a.start < b.start; });
  modules_ = std::move(modules);
}

const Symbolizer::Module* Symbolizer::FindModule(uint64_t address) const {
  auto it = std::upper_bound(modules_.begin(), modules_.end(), address,
                             [](uint64_t value, const Module& m) { return value < m.start; });
  if (it == modules_.begin()) return nullptr;
  --it;
  return address < it->end ? &*it : nullptr;
}

std::string Symbolizer::Lookup(uint64_t address, bool* cacheable) {
  const Module* module = FindModule(address);
  if (module == nullptr &&
      (!refreshed_once_ || std::chrono::steady_clock::now() - last_refresh_ >= kRefreshInterval)) {
    RefreshMaps();
    module = FindModule(address);
  }
  *cacheable = module != nullptr;
  if (module == nullptr) return "[unknown]";
  const uint64_t file_offset = address - module->start + module->file_offset;
  const FileSymbols* file = module->file;
  if (file != nullptr) {
    for (const auto& load : file->loads) {
      if (file_offset < load.offset || file_offset >= load.offset + load.filesz) continue;
      const uint64_t vaddr = file_offset - load.offset + load.vaddr;
      auto it = std::upper_bound(file->symbols.begin(), file->symbols.end(), vaddr,
                                 [](uint64_t value, const Symbol& s) { return value < s.start; });
      if (it != file->symbols.begin()) {
        --it;
        if (vaddr < it->start + it->size || it->size == 0) return Demangle(it->name.c_str());
      }
      break;
    }
  }
  const size_t slash = module->path.rfind('/');
  char offset_text[32];
  snprintf(offset_text, sizeof(offset_text), "+0x%" PRIx64 "]", file_offset);
  return "[" + module->path.substr(slash + 1) + offset_text;
}

std::string Symbolizer::ModuleName(uint64_t pc) const {
  const Module* module = FindModule(pc);
  if (module == nullptr) return "";
  const size_t slash = module->path.rfind('/');
  return slash == std::string::npos ? module->path : module->path.substr(slash + 1);
}

const std::string& Symbolizer::Resolve(uint64_t pc, bool is_return_address) {
  const uint64_t address = is_return_address && pc > 0 ? pc - 1 : pc;
  auto found = cache_.find(address);
  if (found != cache_.end()) return found->second;
  bool cacheable = false;
  std::string name = Lookup(address, &cacheable);
  if (!cacheable) {
    uncached_ = std::move(name);
    return uncached_;
  }
  return cache_.emplace(address, std::move(name)).first->second;
}

}  // namespace ctxprof
