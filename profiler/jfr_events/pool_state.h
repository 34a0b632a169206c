// PoolState and StringTable: the bookkeeping every JFR constant pool of a recording shares.
//
// JFR readers cache pool entries across chunks by key, so a key must denote one value for the
// whole recording (StringTable hands out stable keys 1, 2, ...), and every chunk must carry the
// entries its own events reference (PoolState remembers which chunk last carried each key and
// queues the ones the next checkpoint must write).
//
// Thread safety: none; owned by the JFR writer's thread.
#ifndef CTXPROF_PROFILER_JFR_EVENTS_POOL_STATE_H_
#define CTXPROF_PROFILER_JFR_EVENTS_POOL_STATE_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "profiler/jfr/jfr_buffer.h"

namespace ctxprof {

struct PoolState {
  std::vector<uint32_t> chunk_of_key;  // key -> last chunk number that carried it
  std::vector<uint32_t> pending;       // keys to put into the next checkpoint

  // True if `key` was not yet carried (or queued) in chunk `chunk`; queues it.
  // The check inline, the queuing not: most calls find a key the chunk already carries.
  bool Mark(uint32_t key, uint32_t chunk) {
    if (CarriedIn(key, chunk)) return false;
    Queue(key, chunk);
    return true;
  }
  __attribute__((noinline)) void Queue(uint32_t key, uint32_t chunk) {
    if (key >= chunk_of_key.size()) chunk_of_key.resize(std::max<size_t>(key + 1, 2 * key), 0);
    chunk_of_key[key] = chunk;
    pending.push_back(key);
  }
  // True if chunk `chunk` carried `key`.
  bool CarriedIn(uint32_t key, uint32_t chunk) const {
    return key < chunk_of_key.size() && chunk_of_key[key] == chunk;
  }
};

// Starts a pool in a checkpoint: its type id and the number of queued entries that follow.
inline void PutPoolHeader(uint32_t type, const PoolState& pool, JfrBuffer* out) {
  out->PutVarint(type);
  out->PutVarint(pool.pending.size());
}

// Interns strings to stable keys 1, 2, ...
struct StringTable {
  std::unordered_map<std::string, uint32_t> keys;
  std::vector<std::string> values;  // values[key - 1]

  uint32_t Intern(const std::string& value) {
    // try_emplace: a key already there costs a lookup, not a node built and thrown away.
    auto [it, inserted] = keys.try_emplace(value, static_cast<uint32_t>(values.size() + 1));
    if (inserted) values.push_back(value);
    return it->second;
  }
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_JFR_EVENTS_POOL_STATE_H_
