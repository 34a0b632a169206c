// WalkCheck: the tally of check mode (CTXPROF_CHECK_JAVA_WALK=1), which runs the VM's own Java
// walk beside a reference walk (AsyncGetCallTrace for samples, JVMTI GetStackTrace for events)
// and compares them frame for frame: how many stacks agreed, differed, or were declined by the
// VM walk, and the first few differences, for the line the agent prints at exit.
//
// Thread safety: Compare and the Count* calls may run on any threads at once, in a signal
// handler too: they allocate nothing, take no lock and touch only atomics and the difference
// slots. Counters are relaxed (read once, at exit). Each difference slot is claimed by exactly one
// caller (fetch_add), written, then published with a release store of `ready`; Report reads a
// slot only after an acquire load saw it ready, so it never sees a half-written difference.
#ifndef CTXPROF_JNI_WALK_CHECK_H_
#define CTXPROF_JNI_WALK_CHECK_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "profiler/sampler/sample.h"

namespace ctxprof {

class WalkCheck {
 public:
  static constexpr int kDepth = 256;  // frames compared per stack (4 KiB of a handler's stack)

  // Frames agree when their methods and bcis do, and with `compare_kinds` their kinds too (a
  // reference whose kinds are guesses leaves it off). With `count_extensions`, a VM walk that has
  // every reference frame and more counts as extended (the reference stopped early).
  WalkCheck(bool compare_kinds, bool count_extensions)
      : compare_kinds_(compare_kinds), count_extensions_(count_extensions) {}

  // Compares the reference walk's frames with the VM walk's and counts the outcome.
  void Compare(const RawFrame* reference, int reference_count, const RawFrame* vm, int vm_count);
  // The VM walk declined a stack the reference walked.
  void CountDeclined() { declined_.fetch_add(1, std::memory_order_relaxed); }

  uint64_t agreed() const { return agreed_.load(std::memory_order_relaxed); }
  uint64_t extended() const { return extended_.load(std::memory_order_relaxed); }
  uint64_t differed() const { return differed_.load(std::memory_order_relaxed); }
  uint64_t declined() const { return declined_.load(std::memory_order_relaxed); }
  // "; frame N of M (VM walk: K): <reference_name> id@bci/kind, VM id@bci/kind" per difference
  // kept. Not async-signal-safe (allocates): at exit only.
  std::string Differences(const char* reference_name) const;

 private:
  static constexpr int kDetails = 4;  // differences kept for the report
  struct Difference {
    int at;  // the first frame that differs
    int reference_count, vm_count;
    RawFrame reference, vm;
    std::atomic<bool> ready{false};
  };

  const bool compare_kinds_;
  const bool count_extensions_;
  std::atomic<uint64_t> agreed_{0}, extended_{0}, differed_{0}, declined_{0};
  std::atomic<int> details_claimed_{0};
  Difference details_[kDetails];
};

}  // namespace ctxprof

#endif  // CTXPROF_JNI_WALK_CHECK_H_
