#include "profiler/sampler/cfi_registry.h"

#include <link.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

namespace ctxprof {
namespace {

std::atomic<const CfiRegistry::Snapshot*> g_snapshot{nullptr};
std::atomic<int> g_readers{0};

// Identifies a loaded object across scans: a dlclose and a dlopen of another file at the same
// address change the path, the header's address or its first words.
struct ObjectKey {
  std::string path;
  uintptr_t bias;
  uintptr_t eh_frame_hdr;
  uint64_t header_words[2];

  bool operator<(const ObjectKey& other) const {
    return std::tie(path, bias, eh_frame_hdr, header_words[0], header_words[1]) <
           std::tie(other.path, other.bias, other.eh_frame_hdr, other.header_words[0],
                    other.header_words[1]);
  }
};

// Writer state, guarded by g_writer_mutex.
std::mutex g_writer_mutex;
bool g_scanned = false;
unsigned long long g_loader_adds = 0;
unsigned long long g_loader_subs = 0;
std::map<ObjectKey, std::shared_ptr<const CfiTable>> g_tables;
std::vector<std::unique_ptr<const CfiRegistry::Snapshot>> g_retired;
CfiRegistry::Stats g_stats;

struct LoaderCounters {
  unsigned long long adds = 0;
  unsigned long long subs = 0;
};

int ReadLoaderCounters(dl_phdr_info* info, size_t size, void* data) {
  if (size < offsetof(dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) return 1;
  auto* counters = static_cast<LoaderCounters*>(data);
  counters->adds = info->dlpi_adds;
  counters->subs = info->dlpi_subs;
  return 1;  // the counters are global: the first object is enough
}

struct Scan {
  std::map<ObjectKey, std::shared_ptr<const CfiTable>>* previous;
  std::map<ObjectKey, std::shared_ptr<const CfiTable>> tables;
  std::unique_ptr<CfiRegistry::Snapshot> snapshot;
  size_t failed_objects = 0;
};

int ScanObject(dl_phdr_info* info, size_t, void* data) {
  Scan& scan = *static_cast<Scan*>(data);
  const uintptr_t bias = info->dlpi_addr;
  uintptr_t eh_frame_hdr = 0;
  std::vector<AddressRange> readable;
  std::vector<AddressRange> executable;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& header = info->dlpi_phdr[i];
    const uintptr_t start = bias + header.p_vaddr;
    if (header.p_type == PT_GNU_EH_FRAME) eh_frame_hdr = start;
    if (header.p_type != PT_LOAD) continue;
    if (header.p_flags & PF_R) readable.push_back({start, start + header.p_memsz});
    if (header.p_flags & PF_X) executable.push_back({start, start + header.p_memsz});
  }
  if (eh_frame_hdr == 0 || executable.empty()) return 0;
  ObjectKey key{info->dlpi_name != nullptr ? info->dlpi_name : "", bias, eh_frame_hdr, {0, 0}};
  const bool header_readable = std::any_of(readable.begin(), readable.end(), [&](auto& range) {
    return eh_frame_hdr >= range.start && range.end - eh_frame_hdr >= sizeof(key.header_words);
  });
  if (!header_readable) {
    ++scan.failed_objects;
    return 0;
  }
  memcpy(key.header_words, reinterpret_cast<const void*>(eh_frame_hdr), sizeof(key.header_words));
  std::shared_ptr<const CfiTable> table;
  auto known = scan.previous->find(key);
  if (known != scan.previous->end()) {
    table = known->second;
  } else {
    StatusOr<std::unique_ptr<CfiTable>> built = CfiTable::Build(bias, eh_frame_hdr, readable);
    if (!built.ok()) {
      ++scan.failed_objects;
      return 0;
    }
    table = std::move(built.value());
  }
  for (const AddressRange& range : executable) {
    scan.snapshot->ranges.push_back({range.start, range.end, table->lookup()});
  }
  scan.snapshot->tables.push_back(table);
  scan.tables.emplace(std::move(key), std::move(table));
  return 0;
}

// Frees the retired snapshots when no reader can still hold one. Writer only.
void FreeRetiredLocked() {
  if (!g_retired.empty() && g_readers.load(std::memory_order_seq_cst) == 0) g_retired.clear();
}

void ScanLocked() {
  Scan scan;
  scan.previous = &g_tables;
  scan.snapshot = std::make_unique<CfiRegistry::Snapshot>();
  dl_iterate_phdr(&ScanObject, &scan);
  std::sort(scan.snapshot->ranges.begin(), scan.snapshot->ranges.end(),
            [](const auto& a, const auto& b) { return a.start < b.start; });
  CfiRegistry::Stats stats;
  stats.objects = scan.snapshot->tables.size();
  stats.table_bytes = sizeof(CfiRegistry::Snapshot) +
                      scan.snapshot->ranges.capacity() * sizeof(CfiRegistry::CodeRange);
  for (const auto& table : scan.snapshot->tables) {
    stats.rows += table->row_count();
    stats.table_bytes += table->memory_bytes();
  }
  stats.failed_objects = scan.failed_objects;
  stats.scans = g_stats.scans + 1;
  g_tables = std::move(scan.tables);
  const CfiRegistry::Snapshot* old =
      g_snapshot.exchange(scan.snapshot.release(), std::memory_order_seq_cst);
  if (old != nullptr) g_retired.emplace_back(old);
  FreeRetiredLocked();
  stats.retired_snapshots = g_retired.size();
  g_stats = stats;
  g_scanned = true;
}

}  // namespace

void CfiRegistry::Refresh() {
  std::lock_guard<std::mutex> lock(g_writer_mutex);
  LoaderCounters counters;
  dl_iterate_phdr(&ReadLoaderCounters, &counters);
  if (!g_scanned || counters.adds != g_loader_adds || counters.subs != g_loader_subs) {
    // Counters read before the scan: an object loaded during it triggers one more scan.
    g_loader_adds = counters.adds;
    g_loader_subs = counters.subs;
    ScanLocked();
  } else {
    FreeRetiredLocked();
    g_stats.retired_snapshots = g_retired.size();
  }
}

void CfiRegistry::ForceRescan() {
  std::lock_guard<std::mutex> lock(g_writer_mutex);
  ScanLocked();
}

CfiRegistry::Stats CfiRegistry::stats() {
  std::lock_guard<std::mutex> lock(g_writer_mutex);
  return g_stats;
}

CfiRegistry::Reader::Reader() {
  g_readers.fetch_add(1, std::memory_order_seq_cst);
  snapshot_ = g_snapshot.load(std::memory_order_seq_cst);
}

CfiRegistry::Reader::~Reader() { g_readers.fetch_sub(1, std::memory_order_seq_cst); }

}  // namespace ctxprof
