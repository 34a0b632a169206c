#include "profiler/symbols/kernel_symbols.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string_view>

#include "profiler/symbols/elf_symbols.h"

namespace ctxprof {
namespace {

// One kallsyms line: "ffffffff81000000 T _stext" or "ffffffffc0a01000 t foo\t[module]". False
// for lines that are not text symbols.
bool ParseLine(char* line, uint64_t* address, char* type, std::string_view* name) {
  char* end = nullptr;
  *address = strtoull(line, &end, 16);
  if (end == line || end[0] != ' ' || end[1] == '\0' || end[2] != ' ') return false;
  *type = end[1];
  if (*type != 't' && *type != 'T' && *type != 'w' && *type != 'W') return false;
  char* start = end + 3;
  const size_t length = strcspn(start, " \t\n");
  if (length == 0) return false;
  *name = std::string_view(start, length);
  return true;
}

int RankOf(char type) {
  return BindingRank(type == 'T' ? STB_GLOBAL : type == 'W' ? STB_WEAK : STB_LOCAL);
}

std::string ReadSetting(const char* path) {
  FILE* file = fopen(path, "re");
  if (file == nullptr) return "?";
  char text[32] = {};
  const bool read = fgets(text, sizeof(text), file) != nullptr;
  fclose(file);
  if (!read) return "?";
  text[strcspn(text, "\n")] = '\0';
  return text;
}

}  // namespace

std::unique_ptr<KernelSymbols> KernelSymbols::Load(const std::string& path) {
  auto symbols = std::make_unique<KernelSymbols>();
  FILE* file = fopen(path.c_str(), "re");
  if (file == nullptr) return symbols;
  struct Entry {
    uint64_t address;
    uint32_t offset;
    uint32_t length;
    int rank;
  };
  std::vector<Entry> entries;
  std::string names;
  char line[512];
  while (fgets(line, sizeof(line), file) != nullptr) {
    uint64_t address = 0;
    char type = 0;
    std::string_view name;
    if (!ParseLine(line, &address, &type, &name) || address == 0) continue;
    entries.push_back({address, static_cast<uint32_t>(names.size()),
                       static_cast<uint32_t>(name.size()), RankOf(type)});
    names.append(name);
    names.push_back('\0');
  }
  fclose(file);
  auto name_of = [&names](const Entry& e) {
    return std::string_view(names.data() + e.offset, e.length);
  };
  std::sort(entries.begin(), entries.end(), [&name_of](const Entry& a, const Entry& b) {
    if (a.address != b.address) return a.address < b.address;
    return BetterAlias(name_of(a), a.rank, name_of(b), b.rank);
  });
  entries.erase(std::unique(entries.begin(), entries.end(),
                            [](const Entry& a, const Entry& b) { return a.address == b.address; }),
                entries.end());
  symbols->addresses_.reserve(entries.size());
  symbols->name_offsets_.reserve(entries.size());
  for (const Entry& entry : entries) {
    symbols->addresses_.push_back(entry.address);
    symbols->name_offsets_.push_back(static_cast<uint32_t>(symbols->names_.size()));
    symbols->names_.append(name_of(entry));
    symbols->names_.push_back('\0');
  }
  return symbols;
}

std::shared_ptr<const KernelSymbols> KernelSymbols::Shared() {
  static std::mutex mutex;
  static std::weak_ptr<const KernelSymbols> shared;
  std::lock_guard<std::mutex> lock(mutex);
  std::shared_ptr<const KernelSymbols> symbols = shared.lock();
  if (symbols == nullptr) {
    symbols = Load(kKallsymsPath);
    shared = symbols;
  }
  return symbols;
}

Status KernelSymbols::CheckAddressesVisible() {
  FILE* file = fopen(kKallsymsPath, "re");
  if (file == nullptr) {
    const int os_error = errno;
    return Status::Unavailable(
        std::string("cannot read ") + kKallsymsPath + ": " + strerror(os_error), os_error);
  }
  char line[512];
  bool visible = false;
  bool seen = false;
  while (!seen && fgets(line, sizeof(line), file) != nullptr) {
    uint64_t address = 0;
    char type = 0;
    std::string_view name;
    if (!ParseLine(line, &address, &type, &name)) continue;
    seen = true;
    visible = address != 0;
  }
  fclose(file);
  if (visible) return Status();
  return Status::Unavailable(
      std::string(kKallsymsPath) + " shows no addresses to this process (kernel.kptr_restrict=" +
          ReadSetting("/proc/sys/kernel/kptr_restrict") +
          ", kernel.perf_event_paranoid=" + ReadSetting("/proc/sys/kernel/perf_event_paranoid") +
          "; it needs kptr_restrict 0 with perf_event_paranoid <= 1, or CAP_SYSLOG)",
      0);
}

std::string KernelSymbols::Resolve(uint64_t address) const {
  auto it = std::upper_bound(addresses_.begin(), addresses_.end(), address);
  if (it == addresses_.begin()) return "[kernel]";
  return names_.data() + name_offsets_[static_cast<size_t>(it - addresses_.begin()) - 1];
}

}  // namespace ctxprof
