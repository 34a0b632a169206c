#include "profiler/jfr_events/attribute_value_pool.h"

#include "profiler/jfr/jfr_metadata.h"

namespace ctxprof {

void AttributeValuePool::Mark(uint32_t id, uint32_t chunk, uint64_t* pending_bytes) {
  if (pool_.Mark(id, chunk)) *pending_bytes += 4 + dictionary_->ValueOf(id).size();
}

void AttributeValuePool::WritePending(JfrBuffer* out) {
  if (pool_.pending.empty()) return;
  PutPoolHeader(kJfrTypeString, pool_, out);
  for (uint32_t id : pool_.pending) {
    out->PutVarint(id);
    out->PutString(dictionary_->ValueOf(id));
  }
  pool_.pending.clear();
}

}  // namespace ctxprof
