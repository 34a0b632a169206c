// AttributeRegistry: the attribute names of one profiling session, each bound to a block slot.
//
// Names are registered once per session, in order: the i-th name gets slot i. A name is 1 to
// kMaxNameBytes bytes of [A-Za-z0-9_.-] (so it can appear in option strings, which use ',', ';'
// and '=' as separators, and in JFR field names after the writer maps '.' and '-' to '_').
//
// Thread safety: Register() is not thread-safe and must complete before any reader starts
// (the profiler registers at session start, before sampling). After that, all const methods may
// be called from any thread; they read immutable state.
#ifndef CTXPROF_CONTEXT_ATTRIBUTE_REGISTRY_H_
#define CTXPROF_CONTEXT_ATTRIBUTE_REGISTRY_H_

#include <string>
#include <string_view>
#include <vector>

#include "context/context_block.h"

namespace ctxprof {

class AttributeRegistry {
 public:
  static constexpr size_t kMaxNameBytes = 64;

  // Replaces the registered names with `names`. On error (more than kAttributeSlots names, an
  // empty, too long or badly formed name, a duplicate) nothing changes and *error says which
  // name is wrong and how to fix it.
  bool Register(const std::vector<std::string>& names, std::string* error);

  // The slot of `name`, or -1 when it is not registered.
  int SlotOf(std::string_view name) const;
  // The name bound to `slot`; empty for a free or out-of-range slot.
  std::string_view NameOf(int slot) const;
  int size() const { return static_cast<int>(names_.size()); }
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::vector<std::string> names_;
};

}  // namespace ctxprof

#endif  // CTXPROF_CONTEXT_ATTRIBUTE_REGISTRY_H_
