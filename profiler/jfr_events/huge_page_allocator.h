// HugePageAllocator: a std::allocator for the writer's large tables (stack records, the stack
// table) that asks the kernel for transparent huge pages on allocations of 2 MB and more.
//
// Why: those tables are read at random, one slot or record per sample, over tens of megabytes;
// with 4 KB pages nearly every such read also misses the TLB and walks the page tables. An
// allocation of 2 MB or more is aligned to 2 MB and marked MADV_HUGEPAGE before anything
// touches it, so that its pages fault in as huge pages where the kernel allows them
// (transparent_hugepage "madvise" or "always"). madvise failing (a kernel without THP) leaves
// ordinary pages: the memory is the same, only slower to reach. Smaller allocations are the
// default allocator's. Failure to allocate throws std::bad_alloc, as std::allocator does.
//
// Thread safety: stateless; as std::allocator.
#ifndef CTXPROF_PROFILER_JFR_EVENTS_HUGE_PAGE_ALLOCATOR_H_
#define CTXPROF_PROFILER_JFR_EVENTS_HUGE_PAGE_ALLOCATOR_H_

#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>

namespace ctxprof {

template <typename T>
struct HugePageAllocator {
  using value_type = T;
  static constexpr size_t kHugePageBytes = 2 << 20;

  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) {}

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kHugePageBytes) return std::allocator<T>().allocate(n);
    const size_t rounded = (bytes + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
    void* memory = aligned_alloc(kHugePageBytes, rounded);
    if (memory == nullptr) throw std::bad_alloc();
    // A hint: on failure (no THP in this kernel) the pages are ordinary ones.
    (void)madvise(memory, rounded, MADV_HUGEPAGE);
    return static_cast<T*>(memory);
  }
  void deallocate(T* memory, size_t n) {
    if (n * sizeof(T) < kHugePageBytes) {
      std::allocator<T>().deallocate(memory, n);
    } else {
      free(memory);
    }
  }
};

template <typename T, typename U>
bool operator==(const HugePageAllocator<T>&, const HugePageAllocator<U>&) {
  return true;
}
template <typename T, typename U>
bool operator!=(const HugePageAllocator<T>&, const HugePageAllocator<U>&) {
  return false;
}

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_JFR_EVENTS_HUGE_PAGE_ALLOCATOR_H_
