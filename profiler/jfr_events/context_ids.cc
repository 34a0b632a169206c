#include "profiler/jfr_events/context_ids.h"

namespace ctxprof {

uint64_t ContextIds::IdOf(const ContextSnapshot& context, uint32_t chunk) {
  if (context.empty()) return 0;
  if (chunk != chunk_) {
    chunk_ = chunk;
    index_.Clear();
    contexts_.clear();
  }
  bool inserted;
  const uint32_t position = index_.FindOrInsert(
      HashObjectWords(context), static_cast<uint32_t>(contexts_.size()),
      [this, &context](uint32_t at) { return contexts_[at].second == context; }, &inserted);
  if (inserted) contexts_.emplace_back(next_id_++, context);
  return contexts_[position].first;
}

}  // namespace ctxprof
