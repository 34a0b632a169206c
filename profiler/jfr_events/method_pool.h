// MethodPool: the methods of a recording's stack frames and what they reference — the JFR
// jdk.types.Method, java.lang.Class, jdk.types.Package and jdk.types.Symbol pools.
//
// A method is identified by (class, name, descriptor) as the frame resolver names it; its class
// gets the part of the class name before the last '/' as package (none for array classes such
// as "[Ljava/lang/String;"). Keys are stable for the whole recording; Mark queues a method with
// its class, package and symbols for the current chunk. Events that reference a class directly
// (an allocation's objectClass) use ClassKey and MarkClass.
//
// Thread safety: none; owned by the JFR writer's thread.
#ifndef CTXPROF_PROFILER_JFR_EVENTS_METHOD_POOL_H_
#define CTXPROF_PROFILER_JFR_EVENTS_METHOD_POOL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/jfr/jfr_buffer.h"
#include "profiler/jfr_events/frame_resolver.h"
#include "profiler/jfr_events/pool_state.h"

namespace ctxprof {

class MethodPool {
 public:
  // The method key of `frame` (interned on first sight).
  uint32_t Key(const ResolvedFrame& frame);
  // Queues method `key` and what it references for chunk `chunk`; adds the estimated bytes of
  // the newly queued entries to *pending_bytes. Inline for the usual case, a method the chunk
  // already carries (every frame of every stack a chunk carries comes here).
  void Mark(uint32_t key, uint32_t chunk, uint64_t* pending_bytes) {
    if (!method_pool_.CarriedIn(key, chunk)) MarkNew(key, chunk, pending_bytes);
  }
  // Mark for `count` method keys stored as uint32_t at `keys` (any alignment): a stack's frames.
  void MarkAll(const uint8_t* keys, uint32_t count, uint32_t chunk, uint64_t* pending_bytes);
  // The class key of `class_name` (internal form, "java/lang/String"), interned on first sight,
  // and its queuing for chunk `chunk` (as Mark).
  uint32_t ClassKey(const std::string& class_name);
  void MarkClass(uint32_t class_key, uint32_t chunk, uint64_t* pending_bytes);

  // Number of non-empty pools the next checkpoint carries (0..4).
  uint32_t pending_pools() const;
  // Appends the queued entries as the Method, Class, Package and Symbol pools (empty ones are
  // omitted: the JDK rejects a pool with no entries) and clears the queues.
  void WritePending(JfrBuffer* out);

 private:
  struct Method {
    uint32_t class_key;
    uint32_t name_symbol;
    uint32_t descriptor_symbol;
  };
  struct Class {
    uint32_t name_symbol;
    uint32_t package_key;  // 0 = no package
  };

  void MarkNew(uint32_t key, uint32_t chunk, uint64_t* pending_bytes);
  void MarkSymbol(uint32_t symbol_key, uint32_t chunk, uint64_t* pending_bytes);

  StringTable symbols_;
  StringTable packages_;  // package name -> key; the name's symbol is package_symbols_
  std::vector<uint32_t> package_symbols_;
  StringTable class_names_;
  std::vector<Class> classes_;
  StringTable method_names_;  // "class\0name\0descriptor" -> key
  std::vector<Method> methods_;
  PoolState symbol_pool_, package_pool_, class_pool_, method_pool_;
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_JFR_EVENTS_METHOD_POOL_H_
