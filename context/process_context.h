// ProcessContext: the one context store of a process — the ContextMap, the Dictionary and the
// AttributeRegistry shared by the C API, the Java API and every profiling session.
//
// Why process-wide: dictionary ids and attribute slots stay valid for the life of the process,
// so callers can cache them (the Java side caches both) and a block written before a session
// starts is still meaningful during it. The price is that the dictionary's bounds are process
// bounds: once full, new values map to Dictionary::kOverflowId until the process ends (counted).
//
// Initialization: Init() creates the store once with the given dictionary options; a second
// Init() with different options fails with a message (the first configuration stays). Get()
// initializes with defaults when nobody called Init(); once the store exists it is one acquire
// load, no lock (ThreadContext calls it on every write). Neither is async-signal-safe; call them
// at start-up or from API entry points. The returned object is never destroyed, and its
// accessors are safe from any thread; map() is safe in signal handlers.
//
// The calling thread's own context is written through ThreadContext (thread_context.h), never
// by reaching into map() from a front end.
//
// OpenTelemetry: PublishOtel() turns on the OTEP 4947 thread records for the process (every
// ThreadContext write and the Java writer then keep them current) and publishes the OTEP 4719
// process context with `resource`, again whenever attribute names are registered. Once on, it
// stays on until the process exits.
#ifndef CTXPROF_CONTEXT_PROCESS_CONTEXT_H_
#define CTXPROF_CONTEXT_PROCESS_CONTEXT_H_

#include <memory>
#include <mutex>
#include <string>

#include "context/attribute_registry.h"
#include "context/context_map.h"
#include "context/dictionary.h"
#include "context/otel_process_context.h"

namespace ctxprof {

class ProcessContext {
 public:
  // nullptr (with *error) when the map cannot be reserved or `options` are invalid or differ
  // from those the store was created with.
  static ProcessContext* Init(const Dictionary::Options& options, std::string* error);
  static ProcessContext* Get(std::string* error);

  ContextMap& map() { return *map_; }
  Dictionary& dictionary() { return *dictionary_; }
  AttributeRegistry& attributes() { return attributes_; }

  // False with *error when the process context cannot be mapped (records stay off then).
  bool PublishOtel(const OtelResource& resource, std::string* error);
  bool otel_enabled() { return map_->otel_records().enabled(); }

 private:
  ProcessContext(ContextMap* map, std::unique_ptr<Dictionary> dictionary)
      : map_(map), dictionary_(std::move(dictionary)) {}

  bool RepublishOtel(std::string* error);

  ContextMap* const map_;
  const std::unique_ptr<Dictionary> dictionary_;
  AttributeRegistry attributes_;
  std::mutex otel_mutex_;
  OtelResource otel_resource_;  // guarded by otel_mutex_
};

}  // namespace ctxprof

#endif  // CTXPROF_CONTEXT_PROCESS_CONTEXT_H_
