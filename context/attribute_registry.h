// AttributeRegistry: attribute names bound to block slots, append-only.
//
// A name, once registered, keeps its slot for the registry's lifetime (the process, for the
// registry in ProcessContext), so callers may cache slots the way they cache dictionary ids.
// Registering a list binds each new name to the next free slot; names already registered keep
// theirs. A name is 1 to kMaxNameBytes bytes of [A-Za-z0-9_.-] (so it can appear in option
// strings, which use ',', ';' and '=' as separators, and in JFR field names once '.' and '-'
// become '_').
//
// Thread safety: Register() serializes on a mutex. Readers are lock-free: a slot's name is
// written before the slot count is published with store-release, and readers load the count
// with acquire, so any slot below the count they see has its final, immutable name. The
// on-register hook runs under that mutex after new names are visible (it must not register).
#ifndef CTXPROF_CONTEXT_ATTRIBUTE_REGISTRY_H_
#define CTXPROF_CONTEXT_ATTRIBUTE_REGISTRY_H_

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "context/context_block.h"

namespace ctxprof {

class AttributeRegistry {
 public:
  static constexpr size_t kMaxNameBytes = 64;

  // Binds every name in `names` to a slot. On error (a malformed name, a name listed twice, or
  // more distinct names than kAttributeSlots in all) nothing changes and *error names the
  // offending input and the fix.
  bool Register(const std::vector<std::string>& names, std::string* error);

  // The slot of `name`, or -1 when it is not registered.
  int SlotOf(std::string_view name) const;
  // The name bound to `slot`; empty for a free or out-of-range slot.
  std::string_view NameOf(int slot) const;
  int size() const { return count_.load(std::memory_order_acquire); }
  std::vector<std::string> names() const;
  // Called after each Register() that added names (replaces any earlier hook).
  void SetOnRegister(std::function<void()> hook);

  // Checks one name against the rules above; `where` prefixes the message ("attribute #2").
  static bool ValidateName(const std::string& name, const std::string& where, std::string* error);

 private:
  std::mutex register_mutex_;
  std::string names_[kAttributeSlots];  // slots below count_ are immutable
  std::atomic<int> count_{0};
  std::function<void()> on_register_;  // guarded by register_mutex_
};

}  // namespace ctxprof

#endif  // CTXPROF_CONTEXT_ATTRIBUTE_REGISTRY_H_
