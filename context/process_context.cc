#include "context/process_context.h"

#include <mutex>

namespace ctxprof {

namespace {

std::mutex init_mutex;
ProcessContext* instance = nullptr;  // never deleted: blocks and ids outlive every session

bool SameOptions(const Dictionary::Options& a, const Dictionary::Options& b) {
  return a.max_values == b.max_values && a.max_total_bytes == b.max_total_bytes &&
         a.max_value_bytes == b.max_value_bytes;
}

}  // namespace

ProcessContext* ProcessContext::Init(const Dictionary::Options& options, std::string* error) {
  std::lock_guard<std::mutex> lock(init_mutex);
  if (instance != nullptr) {
    if (SameOptions(instance->dictionary().options(), options)) return instance;
    *error =
        "the context dictionary was already created with max_values=" +
        std::to_string(instance->dictionary().options().max_values) +
        "; dictionary sizes can only be chosen before the first context write or session start";
    return nullptr;
  }
  ContextMap* map = ContextMap::Global();
  if (map == nullptr) {
    *error = ContextMap::GlobalError();
    return nullptr;
  }
  std::unique_ptr<Dictionary> dictionary = Dictionary::Create(options, error);
  if (dictionary == nullptr) return nullptr;
  instance = new ProcessContext(map, std::move(dictionary));
  return instance;
}

ProcessContext* ProcessContext::Get(std::string* error) {
  {
    std::lock_guard<std::mutex> lock(init_mutex);
    if (instance != nullptr) return instance;
  }
  return Init(Dictionary::Options{}, error);
}

}  // namespace ctxprof
