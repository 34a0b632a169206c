// AttributeValuePool: the context attribute values a recording's ctxprof.Context events
// reference — the JFR java.lang.String pool, keyed by Dictionary id.
//
// Dictionary ids are stable for the life of the process, so they are valid pool keys for the
// whole recording; a value's text comes from the Dictionary when its entry is written.
//
// Thread safety: none; owned by the JFR writer's thread (Dictionary::ValueOf is safe from any
// thread).
#ifndef CTXPROF_PROFILER_JFR_EVENTS_ATTRIBUTE_VALUE_POOL_H_
#define CTXPROF_PROFILER_JFR_EVENTS_ATTRIBUTE_VALUE_POOL_H_

#include <cstdint>

#include "context/dictionary.h"
#include "profiler/jfr/jfr_buffer.h"
#include "profiler/jfr_events/pool_state.h"

namespace ctxprof {

class AttributeValuePool {
 public:
  explicit AttributeValuePool(const Dictionary* dictionary) : dictionary_(dictionary) {}

  // Queues the value of dictionary id `id` (not kUnsetId) for chunk `chunk`; adds the estimated
  // bytes of a newly queued entry to *pending_bytes.
  void Mark(uint32_t id, uint32_t chunk, uint64_t* pending_bytes);

  bool has_pending() const { return !pool_.pending.empty(); }
  // Appends the queued values as the String pool (nothing when none) and clears the queue.
  void WritePending(JfrBuffer* out);

 private:
  const Dictionary* const dictionary_;
  PoolState pool_;
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_JFR_EVENTS_ATTRIBUTE_VALUE_POOL_H_
