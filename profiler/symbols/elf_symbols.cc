#include "profiler/symbols/elf_symbols.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace ctxprof {

std::unique_ptr<ElfImage> ElfImage::Open(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return nullptr;
  struct stat info;
  void* data = MAP_FAILED;
  if (fstat(fd, &info) == 0 && S_ISREG(info.st_mode) && info.st_size > 0) {
    data = mmap(nullptr, static_cast<size_t>(info.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  }
  close(fd);
  if (data == MAP_FAILED) return nullptr;
  std::unique_ptr<ElfImage> image(
      new ElfImage(static_cast<const char*>(data), static_cast<size_t>(info.st_size), true));
  return image->Parse() ? std::move(image) : nullptr;
}

std::unique_ptr<ElfImage> ElfImage::InMemory(const char* start, size_t size) {
  std::unique_ptr<ElfImage> image(new ElfImage(start, size, false));
  return image->Parse() ? std::move(image) : nullptr;
}

ElfImage::ElfImage(const char* data, size_t size, bool owned)
    : data_(data), size_(size), owned_(owned) {}

ElfImage::~ElfImage() {
  if (owned_) munmap(const_cast<char*>(data_), size_);
}

const char* ElfImage::At(uint64_t offset, uint64_t length) const {
  if (offset > size_ || length > size_ - offset) return nullptr;
  return data_ + offset;
}

bool ElfImage::Parse() {
  const char* bytes = At(0, sizeof(Elf64_Ehdr));
  if (bytes == nullptr) return false;
  memcpy(&header_, bytes, sizeof(header_));
  if (memcmp(header_.e_ident, ELFMAG, SELFMAG) != 0 || header_.e_ident[EI_CLASS] != ELFCLASS64 ||
      header_.e_phentsize != sizeof(Elf64_Phdr)) {
    return false;
  }
  const char* table =
      At(header_.e_shoff, static_cast<uint64_t>(header_.e_shnum) * sizeof(Elf64_Shdr));
  if (table != nullptr && header_.e_shentsize == sizeof(Elf64_Shdr)) {
    sections_.resize(header_.e_shnum);
    memcpy(sections_.data(), table, sections_.size() * sizeof(Elf64_Shdr));
  }
  return true;
}

std::vector<Elf64_Phdr> ElfImage::ProgramHeaders() const {
  std::vector<Elf64_Phdr> headers;
  const char* table =
      At(header_.e_phoff, static_cast<uint64_t>(header_.e_phnum) * sizeof(Elf64_Phdr));
  if (table == nullptr) return headers;
  headers.resize(header_.e_phnum);
  memcpy(headers.data(), table, headers.size() * sizeof(Elf64_Phdr));
  return headers;
}

const Elf64_Shdr* ElfImage::FindSection(uint32_t type, std::string_view name) const {
  if (header_.e_shstrndx >= sections_.size()) return nullptr;
  const Elf64_Shdr& names = sections_[header_.e_shstrndx];
  const char* text = At(names.sh_offset, names.sh_size);
  if (text == nullptr) return nullptr;
  for (const Elf64_Shdr& section : sections_) {
    if (section.sh_type != type || section.sh_name >= names.sh_size) continue;
    const char* candidate = text + section.sh_name;
    if (std::string_view(candidate, strnlen(candidate, names.sh_size - section.sh_name)) == name) {
      return &section;
    }
  }
  return nullptr;
}

bool ElfImage::HasSection(uint32_t type) const {
  return std::any_of(sections_.begin(), sections_.end(),
                     [type](const Elf64_Shdr& section) { return section.sh_type == type; });
}

std::string ElfImage::BuildId() const {
  // Notes live in SHT_NOTE sections (and PT_NOTE segments, which cover the same bytes); a debug
  // file keeps its note sections, a stripped object too.
  for (const Elf64_Shdr& section : sections_) {
    if (section.sh_type != SHT_NOTE) continue;
    const char* notes = At(section.sh_offset, section.sh_size);
    if (notes == nullptr) continue;
    uint64_t position = 0;
    while (position + sizeof(Elf64_Nhdr) <= section.sh_size) {
      Elf64_Nhdr note;
      memcpy(&note, notes + position, sizeof(note));
      const uint64_t name_size = (static_cast<uint64_t>(note.n_namesz) + 3) & ~3ull;
      const uint64_t description_size = (static_cast<uint64_t>(note.n_descsz) + 3) & ~3ull;
      const uint64_t description = position + sizeof(note) + name_size;
      if (description + description_size > section.sh_size) break;
      if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 &&
          memcmp(notes + position + sizeof(note), "GNU", 4) == 0 && note.n_descsz > 0) {
        return std::string(notes + description, note.n_descsz);
      }
      position = description + description_size;
    }
  }
  return std::string();
}

bool ElfImage::DebugLink(std::string* name, uint32_t* crc) const {
  const Elf64_Shdr* section = FindSection(SHT_PROGBITS, ".gnu_debuglink");
  if (section == nullptr) return false;
  const char* bytes = At(section->sh_offset, section->sh_size);
  if (bytes == nullptr) return false;
  // The name, NUL-terminated and padded to 4 bytes, then the CRC (the file's byte order; we
  // only read images of our own machine's).
  const size_t length = strnlen(bytes, section->sh_size);
  const uint64_t crc_offset = (length + 1 + 3) & ~3ull;
  if (length == 0 || crc_offset + sizeof(uint32_t) > section->sh_size) return false;
  name->assign(bytes, length);
  memcpy(crc, bytes + crc_offset, sizeof(*crc));
  return true;
}

void ElfSymbols::ReadSegments(const ElfImage& image) {
  for (const Elf64_Phdr& header : image.ProgramHeaders()) {
    if (header.p_type == PT_LOAD)
      segments_.push_back({header.p_offset, header.p_vaddr, header.p_filesz});
  }
}

void ElfSymbols::AddFunctions(const ElfImage& image, uint32_t section_type) {
  const std::vector<Elf64_Shdr>& sections = image.sections();
  for (const Elf64_Shdr& table : sections) {
    if (table.sh_type != section_type || table.sh_entsize != sizeof(Elf64_Sym)) continue;
    if (table.sh_link >= sections.size()) continue;
    const Elf64_Shdr& strings = sections[table.sh_link];
    const char* names = image.At(strings.sh_offset, strings.sh_size);
    const char* symbols = image.At(table.sh_offset, table.sh_size);
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
      size_t length = strnlen(name, strings.sh_size - symbol.st_name);
      const char* version = static_cast<const char*>(memchr(name, '@', length));
      if (version != nullptr) length = static_cast<size_t>(version - name);
      if (length == 0) continue;
      functions_.push_back({symbol.st_value, symbol.st_size, std::string(name, length),
                            BindingRank(ELF64_ST_BIND(symbol.st_info))});
    }
  }
}

void ElfSymbols::AddUnwindStarts(const ElfImage& image) {
  // .eh_frame_hdr: version 1, the encodings of eh_frame_ptr, fde_count and the table, then
  // those values and fde_count (initial location, FDE address) pairs. The GNU linkers write the
  // table as DW_EH_PE_datarel | DW_EH_PE_sdata4 (0x3b: signed 4-byte offsets from the section's
  // own address) with 4-byte eh_frame_ptr and fde_count; anything else is not read.
  constexpr uint8_t kDatarelSdata4 = 0x3b;
  // Typed PROGBITS by older linkers, X86_64_UNWIND by newer ones on x86-64.
  const Elf64_Shdr* section = image.FindSection(SHT_PROGBITS, ".eh_frame_hdr");
  if (section == nullptr) section = image.FindSection(SHT_X86_64_UNWIND, ".eh_frame_hdr");
  if (section == nullptr) return;
  const char* header = image.At(section->sh_offset, section->sh_size);
  // Both 4-byte values: udata4 (0x03) or sdata4 (0x0b), with any application bits.
  if (header == nullptr || section->sh_size < 12 || header[0] != 1 ||
      static_cast<uint8_t>(header[3]) != kDatarelSdata4 || (header[1] & 0x07) != 0x03 ||
      (header[2] & 0x07) != 0x03) {
    return;
  }
  uint32_t count = 0;
  memcpy(&count, header + 8, sizeof(count));
  if (count > (section->sh_size - 12) / 8) return;
  unwind_starts_.reserve(unwind_starts_.size() + count);
  for (uint32_t i = 0; i < count; ++i) {
    int32_t location = 0;
    memcpy(&location, header + 12 + 8 * static_cast<uint64_t>(i), sizeof(location));
    unwind_starts_.push_back(section->sh_addr +
                             static_cast<uint64_t>(static_cast<int64_t>(location)));
  }
}

void ElfSymbols::Finish() {
  std::sort(functions_.begin(), functions_.end(), [](const Function& a, const Function& b) {
    if (a.start != b.start) return a.start < b.start;
    // At one address: a sized symbol first (it bounds the function), then the better alias.
    if ((a.size != 0) != (b.size != 0)) return a.size != 0;
    return BetterAlias(a.name, a.binding_rank, b.name, b.binding_rank);
  });
  functions_.erase(
      std::unique(functions_.begin(), functions_.end(),
                  [](const Function& a, const Function& b) { return a.start == b.start; }),
      functions_.end());
  functions_.shrink_to_fit();
  std::sort(unwind_starts_.begin(), unwind_starts_.end());
}

bool ElfSymbols::VirtualAddressOf(uint64_t file_offset, uint64_t* address) const {
  for (const Segment& segment : segments_) {
    if (file_offset >= segment.offset && file_offset - segment.offset < segment.filesz) {
      *address = file_offset - segment.offset + segment.vaddr;
      return true;
    }
  }
  return false;
}

const std::string* ElfSymbols::FunctionAt(uint64_t address) const {
  auto it = std::upper_bound(functions_.begin(), functions_.end(), address,
                             [](uint64_t value, const Function& f) { return value < f.start; });
  if (it == functions_.begin()) return nullptr;
  --it;
  if (it->size != 0 && address - it->start >= it->size) return nullptr;
  return &it->name;
}

bool ElfSymbols::FunctionStartAt(uint64_t address, uint64_t* start) const {
  auto it = std::upper_bound(unwind_starts_.begin(), unwind_starts_.end(), address);
  if (it == unwind_starts_.begin()) return false;
  *start = *(it - 1);
  return true;
}

int BindingRank(unsigned char binding) {
  switch (binding) {
    case STB_GLOBAL:
      return 0;
    case STB_WEAK:
      return 1;
    default:
      return 2;
  }
}

bool BetterAlias(std::string_view a, int a_rank, std::string_view b, int b_rank) {
  if (a_rank != b_rank) return a_rank < b_rank;
  const size_t a_underscores = a.find_first_not_of('_');
  const size_t b_underscores = b.find_first_not_of('_');
  if (a_underscores != b_underscores) return a_underscores < b_underscores;
  if (a.size() != b.size()) return a.size() < b.size();
  return a < b;
}

}  // namespace ctxprof
