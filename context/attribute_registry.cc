#include "context/attribute_registry.h"

#include <set>

namespace ctxprof {

namespace {

bool IsNameByte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-';
}

}  // namespace

bool AttributeRegistry::ValidateName(const std::string& name, const std::string& where,
                                     std::string* error) {
  if (name.empty()) {
    *error = where + " is empty: give every attribute a name";
    return false;
  }
  for (char c : name) {
    if (!IsNameByte(c)) {
      *error = where + " '" + name + "' contains '" + std::string(1, c) +
               "': names use only letters, digits, '_', '.' and '-'";
      return false;
    }
  }
  if (name.size() > kMaxNameBytes) {
    *error = where + " '" + name.substr(0, 16) + "...' is " + std::to_string(name.size()) +
             " bytes: names are at most " + std::to_string(kMaxNameBytes) + " bytes";
    return false;
  }
  return true;
}

bool AttributeRegistry::Register(const std::vector<std::string>& names, std::string* error) {
  std::set<std::string_view> listed;
  for (size_t i = 0; i < names.size(); i++) {
    if (!ValidateName(names[i], "attribute #" + std::to_string(i + 1), error)) return false;
    if (!listed.insert(names[i]).second) {
      *error = "attribute '" + names[i] + "' is listed twice: list each name once";
      return false;
    }
  }
  std::lock_guard<std::mutex> lock(register_mutex_);
  const int count = count_.load(std::memory_order_relaxed);
  std::vector<const std::string*> added;
  for (const std::string& name : names) {
    if (SlotOf(name) < 0) added.push_back(&name);
  }
  if (count + added.size() > static_cast<size_t>(kAttributeSlots)) {
    std::string registered;
    for (int slot = 0; slot < count; slot++) registered += (slot ? ", " : "") + names_[slot];
    *error = "cannot register " + std::to_string(added.size()) + " more attribute(s): a context " +
             "block has " + std::to_string(kAttributeSlots) + " slots and " +
             std::to_string(count) + " are taken (" + (count ? registered : "none") +
             "); register at most " + std::to_string(kAttributeSlots) + " names in all";
    return false;
  }
  for (size_t i = 0; i < added.size(); i++) names_[count + i] = *added[i];
  count_.store(count + static_cast<int>(added.size()), std::memory_order_release);
  if (!added.empty() && on_register_) on_register_();
  return true;
}

void AttributeRegistry::SetOnRegister(std::function<void()> hook) {
  std::lock_guard<std::mutex> lock(register_mutex_);
  on_register_ = std::move(hook);
}

int AttributeRegistry::SlotOf(std::string_view name) const {
  const int count = count_.load(std::memory_order_acquire);
  for (int slot = 0; slot < count; slot++) {
    if (names_[slot] == name) return slot;
  }
  return -1;
}

std::string_view AttributeRegistry::NameOf(int slot) const {
  if (slot < 0 || slot >= count_.load(std::memory_order_acquire)) return {};
  return names_[slot];
}

std::vector<std::string> AttributeRegistry::names() const {
  const int count = count_.load(std::memory_order_acquire);
  return std::vector<std::string>(names_, names_ + count);
}

}  // namespace ctxprof
