#include "profiler/sampler/perf_callchain.h"

#include <errno.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>

#include "profiler/sampler/machine_context.h"

namespace ctxprof {
namespace {

struct Slot {
  std::atomic<perf_event_mmap_page*> page{nullptr};  // the publication; null = no ring
  std::atomic<pid_t> tid{0};                         // the event's thread, set before `page`
  std::atomic<uint32_t> readers{0};                  // handlers between their two steps
};
static_assert(sizeof(Slot) == 16, "the slot table's size is documented in the header");

Slot g_slots[PerfCallchain::kMaxFd];
// Set by the first Attach, before it publishes anything; constant afterwards.
std::atomic<uint64_t> g_page_size{0};

size_t MappingSize(uint64_t page_size) { return (1 + PerfCallchain::kDataPages) * page_size; }

// The 8-byte word at ring position `position` (any counter value).
uint64_t WordAt(const char* data, uint64_t mask, uint64_t position) {
  uint64_t word;
  __builtin_memcpy(&word, data + (position & mask), sizeof(word));
  return word;
}

// Counts a reader in `slot` and returns its ring when it belongs to `tid`, else null; the
// caller must call Leave(slot) either way.
perf_event_mmap_page* Enter(Slot& slot, pid_t tid) {
  slot.readers.fetch_add(1, std::memory_order_seq_cst);
  perf_event_mmap_page* page = slot.page.load(std::memory_order_seq_cst);
  if (page == nullptr || slot.tid.load(std::memory_order_relaxed) != tid) return nullptr;
  return page;
}

void Leave(Slot& slot) { slot.readers.fetch_sub(1, std::memory_order_release); }

bool ValidFd(int fd) { return fd >= 0 && fd < PerfCallchain::kMaxFd; }

}  // namespace

void PerfCallchain::Configure(perf_event_attr* attr) {
  // perf_event_open fails with EOVERFLOW above the system's limit (default 127).
  static const int limit = [] {
    int value = kMaxKernelFrames;
    if (FILE* file = fopen("/proc/sys/kernel/perf_event_max_stack", "re")) {
      if (fscanf(file, "%d", &value) != 1) value = kMaxKernelFrames;
      fclose(file);
    }
    return value < kMaxKernelFrames ? value : kMaxKernelFrames;
  }();
  attr->sample_type |= PERF_SAMPLE_CALLCHAIN;
  attr->exclude_callchain_user = 1;
  attr->sample_max_stack = static_cast<uint16_t>(limit < 0 ? 0 : limit);
}

int PerfCallchain::Attach(int fd, pid_t tid) {
  if (!ValidFd(fd)) return -EBADF;
  uint64_t page_size = g_page_size.load(std::memory_order_relaxed);
  if (page_size == 0) {
    page_size = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    g_page_size.store(page_size, std::memory_order_relaxed);
  }
  void* mapping = mmap(nullptr, MappingSize(page_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (mapping == MAP_FAILED) return -errno;
  auto* page = static_cast<perf_event_mmap_page*>(mapping);
  // Kernels before 4.1 leave data_offset and data_size zero and use this same layout.
  const bool expected_layout =
      (page->data_offset == 0 && page->data_size == 0) ||
      (page->data_offset == page_size && page->data_size == kDataPages * page_size);
  if (!expected_layout) {
    munmap(mapping, MappingSize(page_size));
    return -EPROTO;
  }
  Slot& slot = g_slots[fd];
  slot.tid.store(tid, std::memory_order_relaxed);
  slot.page.store(page, std::memory_order_seq_cst);
  return 0;
}

void PerfCallchain::Detach(int fd) {
  if (!ValidFd(fd)) return;
  Slot& slot = g_slots[fd];
  perf_event_mmap_page* page = slot.page.exchange(nullptr, std::memory_order_seq_cst);
  if (page == nullptr) return;
  // A reader holds the slot for the length of one signal's handler (Unread lives from the ring's
  // scan to the end of the sample): microseconds, unless its thread is preempted in between.
  while (slot.readers.load(std::memory_order_acquire) != 0) {
    const timespec pause = {0, 50 * 1000};
    nanosleep(&pause, nullptr);
  }
  munmap(page, MappingSize(g_page_size.load(std::memory_order_relaxed)));
}

PerfCallchain::Unread::Unread(int fd, pid_t tid) : fd_(fd) {
  if (!ValidFd(fd)) return;
  perf_event_mmap_page* page = Enter(g_slots[fd], tid);
  if (page == nullptr) {
    Leave(g_slots[fd]);
    return;
  }
  page_ = page;
  const uint64_t page_size = g_page_size.load(std::memory_order_relaxed);
  const char* data = reinterpret_cast<const char*>(page) + page_size;
  const uint64_t data_size = kDataPages * page_size;
  const uint64_t mask = data_size - 1;
  head_ = __atomic_load_n(&page->data_head, __ATOMIC_ACQUIRE);
  const uint64_t tail = page->data_tail;  // only we write it

  // Every record in [tail, head): sample records and lost-records reports count the overflows;
  // the newest sample is the kernel frames' source unless a lost-records report follows it. The
  // kernel never holds more than the data size unread; a bogus size ends the scan.
  sample_ = head_;
  for (uint64_t position = tail; position < head_ && head_ - position <= data_size;) {
    perf_event_header header;
    const uint64_t word = WordAt(data, mask, position);
    __builtin_memcpy(&header, &word, sizeof(header));
    if (header.size < sizeof(header) || header.size % 8 != 0 || header.size > head_ - position) {
      sample_ = head_;
      break;
    }
    if (header.type == PERF_RECORD_SAMPLE) {
      ++overflows_;
      sample_ = position;
      sample_size_ = header.size;
    } else if (header.type == PERF_RECORD_LOST && header.size >= 24) {  // header, id, lost
      const uint64_t lost = WordAt(data, mask, position + 16);
      overflows_ =
          lost < UINT32_MAX - overflows_ ? overflows_ + static_cast<uint32_t>(lost) : UINT32_MAX;
      sample_ = head_;
    }
    position += header.size;
  }
}

PerfCallchain::Unread::~Unread() {
  if (page_ == nullptr) return;
  __atomic_store_n(&page_->data_tail, head_, __ATOMIC_RELEASE);
  Leave(g_slots[fd_]);
}

int PerfCallchain::Unread::KernelFrames(RawFrame* frames, int max_frames, bool* truncated) const {
  // PERF_SAMPLE_CALLCHAIN alone: the header, nr, then nr entries: context markers
  // (PERF_CONTEXT_KERNEL, _USER, ...: values >= PERF_CONTEXT_MAX) and instruction pointers. A
  // record of the header alone has no callchain (kernel frames off).
  if (page_ == nullptr || sample_ == head_ || sample_size_ < 16) return 0;
  const uint64_t page_size = g_page_size.load(std::memory_order_relaxed);
  const char* data = reinterpret_cast<const char*>(page_) + page_size;
  const uint64_t mask = kDataPages * page_size - 1;
  const uint64_t entries = WordAt(data, mask, sample_ + 8);
  const uint64_t room = (sample_size_ - 16) / 8;
  bool in_kernel = false;
  int count = 0;
  for (uint64_t i = 0; i < entries && i < room; ++i) {
    const uint64_t ip = WordAt(data, mask, sample_ + 16 + 8 * i);
    if (ip >= static_cast<uint64_t>(PERF_CONTEXT_MAX)) {
      in_kernel = ip == static_cast<uint64_t>(PERF_CONTEXT_KERNEL);
      continue;
    }
    if (!in_kernel || ip < MachineContext::kKernelSpaceStart) continue;
    if (count == max_frames) {
      *truncated = true;
      break;
    }
    frames[count].id = ip;
    frames[count].bci = count == 0 ? kNativeInterruptedPc : kNativeReturnAddress;
    frames[count].kind = FrameKind::kKernel;
    ++count;
  }
  return count;
}

}  // namespace ctxprof
