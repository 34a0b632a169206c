#include "jni/walk_check.h"

#include <algorithm>

namespace ctxprof {

void WalkCheck::Compare(const RawFrame* reference, int reference_count, const RawFrame* vm,
                        int vm_count) {
  const int compared = std::min(reference_count, kDepth);
  int at = 0;
  while (at < compared && at < vm_count && reference[at].id == vm[at].id &&
         reference[at].bci == vm[at].bci &&
         (!compare_kinds_ || reference[at].kind == vm[at].kind)) {
    at++;
  }
  if (at == compared && vm_count == compared) {
    agreed_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (count_extensions_ && at == compared && vm_count > compared && compared == reference_count) {
    extended_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  differed_.fetch_add(1, std::memory_order_relaxed);
  const int slot = details_claimed_.fetch_add(1, std::memory_order_relaxed);
  if (slot >= kDetails) return;
  Difference& difference = details_[slot];
  difference.at = at;
  difference.reference_count = reference_count;
  difference.vm_count = vm_count;
  difference.reference = at < reference_count ? reference[at] : RawFrame{};
  difference.vm = at < vm_count ? vm[at] : RawFrame{};
  difference.ready.store(true, std::memory_order_release);
}

std::string WalkCheck::Differences(const char* reference_name) const {
  auto frame = [](const RawFrame& f) {
    return std::to_string(f.id) + "@" + std::to_string(f.bci) + "/" +
           std::to_string(static_cast<int>(f.kind));
  };
  std::string text;
  for (const Difference& d : details_) {
    if (!d.ready.load(std::memory_order_acquire)) continue;
    text += "; frame " + std::to_string(d.at) + " of " + std::to_string(d.reference_count) +
            " (VM walk: " + std::to_string(d.vm_count) + "): " + reference_name + " " +
            frame(d.reference) + ", VM " + frame(d.vm);
  }
  return text;
}

}  // namespace ctxprof
