#include "profiler/jfr_events/method_pool.h"

#include <cstring>

#include "profiler/jfr/jfr_metadata.h"

namespace ctxprof {

uint32_t MethodPool::Key(const ResolvedFrame& frame) {
  std::string id = frame.class_name;
  id.push_back('\0');
  id += frame.method_name;
  id.push_back('\0');
  id += frame.descriptor;
  const uint32_t key = method_names_.Intern(id);
  if (key > methods_.size()) {
    methods_.push_back(Method{ClassKey(frame.class_name), symbols_.Intern(frame.method_name),
                              symbols_.Intern(frame.descriptor)});
    std::vector<uint32_t>& carried = method_pool_.chunk_of_key;
    if (key >= carried.size()) carried.resize(2 * key, 0);  // MarkAll reads it unchecked
  }
  return key;
}

uint32_t MethodPool::ClassKey(const std::string& class_name) {
  const uint32_t key = class_names_.Intern(class_name);
  if (key > classes_.size()) {
    uint32_t package_key = 0;
    const size_t slash = class_name.rfind('/');
    if (slash != std::string::npos && class_name[0] != '[') {
      const std::string package = class_name.substr(0, slash);
      package_key = packages_.Intern(package);
      if (package_key > package_symbols_.size())
        package_symbols_.push_back(symbols_.Intern(package));
    }
    classes_.push_back(Class{symbols_.Intern(class_name), package_key});
  }
  return key;
}

void MethodPool::MarkAll(const uint8_t* keys, uint32_t count, uint32_t chunk,
                         uint64_t* pending_bytes) {
  // Key sized the carried-in table for every method, and MarkNew never grows it: no bounds
  // check, and the table stays where it is.
  const uint32_t* carried = method_pool_.chunk_of_key.data();
  for (uint32_t i = 0; i < count; i++) {
    uint32_t key;
    memcpy(&key, keys + i * sizeof(uint32_t), sizeof(uint32_t));
    if (carried[key] != chunk) MarkNew(key, chunk, pending_bytes);
  }
}

void MethodPool::MarkNew(uint32_t key, uint32_t chunk, uint64_t* pending_bytes) {
  if (!method_pool_.Mark(key, chunk)) return;
  const Method& method = methods_[key - 1];
  *pending_bytes += 8;
  MarkSymbol(method.name_symbol, chunk, pending_bytes);
  MarkSymbol(method.descriptor_symbol, chunk, pending_bytes);
  MarkClass(method.class_key, chunk, pending_bytes);
}

void MethodPool::MarkClass(uint32_t class_key, uint32_t chunk, uint64_t* pending_bytes) {
  if (!class_pool_.Mark(class_key, chunk)) return;
  const Class& klass = classes_[class_key - 1];
  *pending_bytes += 6;
  MarkSymbol(klass.name_symbol, chunk, pending_bytes);
  if (klass.package_key != 0 && package_pool_.Mark(klass.package_key, chunk)) {
    *pending_bytes += 4;
    MarkSymbol(package_symbols_[klass.package_key - 1], chunk, pending_bytes);
  }
}

void MethodPool::MarkSymbol(uint32_t symbol_key, uint32_t chunk, uint64_t* pending_bytes) {
  if (symbol_pool_.Mark(symbol_key, chunk)) {
    *pending_bytes += 4 + symbols_.values[symbol_key - 1].size();
  }
}

uint32_t MethodPool::pending_pools() const {
  uint32_t count = 0;
  for (const PoolState* pool : {&method_pool_, &class_pool_, &package_pool_, &symbol_pool_}) {
    count += pool->pending.empty() ? 0 : 1;
  }
  return count;
}

void MethodPool::WritePending(JfrBuffer* out) {
  if (!method_pool_.pending.empty()) {
    PutPoolHeader(kJfrTypeMethod, method_pool_, out);
    for (uint32_t key : method_pool_.pending) {
      const Method& method = methods_[key - 1];
      out->PutVarint(key);
      out->PutVarint(method.class_key);
      out->PutVarint(method.name_symbol);
      out->PutVarint(method.descriptor_symbol);
      out->PutVarint(0);  // modifiers
      out->PutByte(0);    // hidden
    }
  }
  if (!class_pool_.pending.empty()) {
    PutPoolHeader(kJfrTypeClass, class_pool_, out);
    for (uint32_t key : class_pool_.pending) {
      const Class& klass = classes_[key - 1];
      out->PutVarint(key);
      out->PutVarint(0);  // class loader: null
      out->PutVarint(klass.name_symbol);
      out->PutVarint(klass.package_key);
      out->PutVarint(0);  // modifiers
    }
  }
  if (!package_pool_.pending.empty()) {
    PutPoolHeader(kJfrTypePackage, package_pool_, out);
    for (uint32_t key : package_pool_.pending) {
      out->PutVarint(key);
      out->PutVarint(package_symbols_[key - 1]);
    }
  }
  if (!symbol_pool_.pending.empty()) {
    PutPoolHeader(kJfrTypeSymbol, symbol_pool_, out);
    for (uint32_t key : symbol_pool_.pending) {
      out->PutVarint(key);
      out->PutString(symbols_.values[key - 1]);
    }
  }
  for (PoolState* pool : {&method_pool_, &class_pool_, &package_pool_, &symbol_pool_}) {
    pool->pending.clear();
  }
}

}  // namespace ctxprof
