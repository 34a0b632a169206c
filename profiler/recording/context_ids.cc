#include "profiler/recording/context_ids.h"

namespace ctxprof {

size_t ContextIds::Hash::operator()(const ContextSnapshot& context) const {
  uint64_t hash = context.trace_id_high * 0x9E3779B97F4A7C15ULL;
  hash = (hash ^ context.trace_id_low) * 0xC2B2AE3D27D4EB4FULL;
  hash = (hash ^ context.span_id) * 0x9E3779B97F4A7C15ULL;
  for (uint32_t id : context.attributes) hash = (hash ^ id) * 0xC2B2AE3D27D4EB4FULL;
  return static_cast<size_t>(hash ^ (hash >> 32));
}

uint64_t ContextIds::IdOf(const ContextSnapshot& context, uint32_t chunk) {
  if (context.empty()) return 0;
  if (chunk != chunk_) {
    chunk_ = chunk;
    ids_.clear();
    contexts_.clear();
  }
  auto [it, inserted] = ids_.try_emplace(context, next_id_);
  if (inserted) {
    contexts_.emplace_back(next_id_, context);
    next_id_++;
  }
  return it->second;
}

}  // namespace ctxprof
