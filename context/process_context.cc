#include "context/process_context.h"

#include <atomic>
#include <mutex>

namespace ctxprof {

namespace {

std::mutex init_mutex;
// Never deleted: blocks and ids outlive every session. Written once under init_mutex with
// release; Get() loads it with acquire (pairs), so a caller that sees the pointer sees the
// constructed store without taking the lock.
std::atomic<ProcessContext*> instance{nullptr};

bool SameOptions(const Dictionary::Options& a, const Dictionary::Options& b) {
  return a.max_values == b.max_values && a.max_total_bytes == b.max_total_bytes &&
         a.max_value_bytes == b.max_value_bytes;
}

}  // namespace

ProcessContext* ProcessContext::Init(const Dictionary::Options& options, std::string* error) {
  std::lock_guard<std::mutex> lock(init_mutex);
  ProcessContext* existing = instance.load(std::memory_order_relaxed);  // written under the lock
  if (existing != nullptr) {
    if (SameOptions(existing->dictionary().options(), options)) return existing;
    *error =
        "the context dictionary was already created with max_values=" +
        std::to_string(existing->dictionary().options().max_values) +
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
  ProcessContext* created = new ProcessContext(map, std::move(dictionary));
  instance.store(created, std::memory_order_release);
  return created;
}

ProcessContext* ProcessContext::Get(std::string* error) {
  ProcessContext* existing = instance.load(std::memory_order_acquire);
  return existing != nullptr ? existing : Init(Dictionary::Options{}, error);
}

bool ProcessContext::PublishOtel(const OtelResource& resource, std::string* error) {
  {
    std::lock_guard<std::mutex> lock(otel_mutex_);
    otel_resource_ = resource;
  }
  // Readers decode a record's keys with the key map: republish it whenever it grows.
  attributes_.SetOnRegister([this] {
    std::string ignored;  // the mapping exists already: an update cannot fail
    RepublishOtel(&ignored);
  });
  if (!RepublishOtel(error)) return false;
  map_->otel_records().Enable();
  return true;
}

bool ProcessContext::RepublishOtel(std::string* error) {
  std::lock_guard<std::mutex> lock(otel_mutex_);
  return PublishOtelProcessContext(otel_resource_, attributes_.names(), error);
}

}  // namespace ctxprof
