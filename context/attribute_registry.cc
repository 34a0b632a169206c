#include "context/attribute_registry.h"

#include <set>

namespace ctxprof {

namespace {

bool IsNameByte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-';
}

}  // namespace

bool AttributeRegistry::Register(const std::vector<std::string>& names, std::string* error) {
  if (names.size() > static_cast<size_t>(kAttributeSlots)) {
    *error = std::to_string(names.size()) + " attributes requested but a context block has " +
             std::to_string(kAttributeSlots) + " slots: register at most " +
             std::to_string(kAttributeSlots) + " names";
    return false;
  }
  std::set<std::string_view> seen;
  for (size_t i = 0; i < names.size(); i++) {
    const std::string& name = names[i];
    const std::string where = "attribute #" + std::to_string(i + 1);
    if (name.empty()) {
      *error = where + " is empty: give every attribute a name";
      return false;
    }
    if (name.size() > kMaxNameBytes) {
      *error = where + " '" + name.substr(0, 16) + "...' is " + std::to_string(name.size()) +
               " bytes: names are at most " + std::to_string(kMaxNameBytes) + " bytes";
      return false;
    }
    for (char c : name) {
      if (!IsNameByte(c)) {
        *error = where + " '" + name + "' contains '" + std::string(1, c) +
                 "': names use only letters, digits, '_', '.' and '-'";
        return false;
      }
    }
    if (!seen.insert(name).second) {
      *error = "attribute '" + name + "' is registered twice: list each name once";
      return false;
    }
  }
  names_ = names;
  return true;
}

int AttributeRegistry::SlotOf(std::string_view name) const {
  for (size_t i = 0; i < names_.size(); i++) {
    if (names_[i] == name) return static_cast<int>(i);
  }
  return -1;
}

std::string_view AttributeRegistry::NameOf(int slot) const {
  if (slot < 0 || static_cast<size_t>(slot) >= names_.size()) return {};
  return names_[slot];
}

}  // namespace ctxprof
