#include "context/dictionary.h"

#include <cstring>

namespace ctxprof {

namespace {

size_t NextPowerOfTwo(size_t n) {
  size_t power = 1;
  while (power < n) power <<= 1;
  return power;
}

}  // namespace

std::unique_ptr<Dictionary> Dictionary::Create(const Options& options, std::string* error) {
  if (options.max_values == 0 || options.max_values > (1u << 30)) {
    *error = "dictionary max_values " + std::to_string(options.max_values) +
             " is out of range: use 1..1073741824";
    return nullptr;
  }
  if (options.max_value_bytes == 0 || options.max_value_bytes > kMaxValueBytesLimit) {
    *error = "dictionary max_value_bytes " + std::to_string(options.max_value_bytes) +
             " is out of range: use 1.." + std::to_string(kMaxValueBytesLimit);
    return nullptr;
  }
  if (options.max_total_bytes < options.max_value_bytes) {
    *error = "dictionary max_total_bytes " + std::to_string(options.max_total_bytes) +
             " is smaller than max_value_bytes " + std::to_string(options.max_value_bytes) +
             ": raise max_total_bytes";
    return nullptr;
  }
  return std::unique_ptr<Dictionary>(new Dictionary(options));
}

Dictionary::Dictionary(const Options& options)
    : options_(options),
      // At most half full, so probe sequences stay short and always end at an empty slot.
      table_mask_(NextPowerOfTwo(static_cast<size_t>(options.max_values) * 2) - 1),
      table_(new std::atomic<uint32_t>[table_mask_ + 1]),
      entries_(new Entry[static_cast<size_t>(options.max_values) + kFirstValueId]),
      arena_(new char[options.max_total_bytes]) {
  for (size_t i = 0; i <= table_mask_; i++) table_[i].store(kUnsetId, std::memory_order_relaxed);
  entries_[kOverflowId].length = static_cast<uint32_t>(kOverflowValue.size());
  entries_[kOverflowId].bytes.store(kOverflowValue.data(), std::memory_order_release);
}

uint32_t Dictionary::Hash(std::string_view value) {
  // FNV-1a: short strings, no allocation, good enough spread for a half-full table.
  uint32_t hash = 2166136261u;
  for (unsigned char c : value) {
    hash ^= c;
    hash *= 16777619u;
  }
  return hash;
}

std::string_view Dictionary::TruncateUtf8(std::string_view value, size_t limit) {
  if (value.size() <= limit) return value;
  size_t cut = limit;
  // value[cut] is the first byte dropped; if it continues a sequence, drop that whole sequence.
  while (cut > 0 && (static_cast<unsigned char>(value[cut]) & 0xC0) == 0x80) cut--;
  return value.substr(0, cut);
}

uint32_t Dictionary::Probe(std::string_view value, uint32_t hash, size_t* empty_slot) const {
  for (size_t slot = hash & table_mask_;; slot = (slot + 1) & table_mask_) {
    const uint32_t id = table_[slot].load(std::memory_order_acquire);
    if (id == kUnsetId) {
      if (empty_slot != nullptr) *empty_slot = slot;
      return kUnsetId;
    }
    const Entry& entry = entries_[id];
    if (entry.hash == hash && entry.length == value.size() &&
        memcmp(entry.bytes.load(std::memory_order_relaxed), value.data(), value.size()) == 0) {
      return id;
    }
  }
}

uint32_t Dictionary::Find(std::string_view value) const {
  value = TruncateUtf8(value, options_.max_value_bytes);
  return Probe(value, Hash(value), nullptr);
}

uint32_t Dictionary::Intern(std::string_view value) {
  const bool truncated = value.size() > options_.max_value_bytes;
  value = TruncateUtf8(value, options_.max_value_bytes);
  const uint32_t hash = Hash(value);
  uint32_t id = Probe(value, hash, nullptr);
  if (id == kUnsetId) {
    std::lock_guard<std::mutex> lock(insert_mutex_);
    size_t empty_slot = 0;
    id = Probe(value, hash, &empty_slot);  // another thread may have inserted it meanwhile
    if (id == kUnsetId) {
      const uint32_t next = next_id_.load(std::memory_order_relaxed);
      if (next - kFirstValueId >= options_.max_values ||
          arena_used_ + value.size() > options_.max_total_bytes) {
        overflowed_.fetch_add(1, std::memory_order_relaxed);
        return kOverflowId;
      }
      char* bytes = arena_.get() + arena_used_;
      memcpy(bytes, value.data(), value.size());
      arena_used_ += value.size();
      Entry& entry = entries_[next];
      entry.length = static_cast<uint32_t>(value.size());
      entry.hash = hash;
      entry.bytes.store(bytes, std::memory_order_relaxed);
      next_id_.store(next + 1, std::memory_order_release);
      // Publishes the entry: pairs with the load-acquire in Probe().
      table_[empty_slot].store(next, std::memory_order_release);
      id = next;
    }
  }
  if (truncated) truncated_.fetch_add(1, std::memory_order_relaxed);
  return id;
}

std::string_view Dictionary::ValueOf(uint32_t id) const {
  if (id == kUnsetId || id >= next_id_.load(std::memory_order_acquire)) return {};
  const Entry& entry = entries_[id];
  return std::string_view(entry.bytes.load(std::memory_order_relaxed), entry.length);
}

uint32_t Dictionary::size() const {
  return next_id_.load(std::memory_order_acquire) - kFirstValueId;
}

}  // namespace ctxprof
