// ContextIds: the contextId of each distinct context (trace id, span id, attribute values) in a
// chunk — the number sample events carry with contextid=true, and the key Pyroscope's labels
// snapshot maps to the context's labels.
//
// Ids come from one counter for the whole recording (1, 2, ...; 0 = no context) and are never
// reused, but the table that finds the id of a context is per chunk: a context seen again in a
// later chunk gets a new id. So memory is bounded by the contexts of one chunk (a long recording
// with a new span id per request does not grow it), and every chunk resolves its ids by itself —
// through its own ctxprof.Context events, which carry the id of their context, or through the
// snapshot sent with an upload of that chunk file.
//
// Thread safety: none; owned by the JFR writer's thread.
#ifndef CTXPROF_PROFILER_JFR_EVENTS_CONTEXT_IDS_H_
#define CTXPROF_PROFILER_JFR_EVENTS_CONTEXT_IDS_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "context/context_block.h"
#include "profiler/jfr_events/flat_index.h"

namespace ctxprof {

class ContextIds {
 public:
  // The id of `context` in chunk `chunk` (chunk numbers only grow); 0 for an empty context.
  uint64_t IdOf(const ContextSnapshot& context, uint32_t chunk);

  // A context's id kept beside the context by a caller that asks for it again (a span its
  // records join, then its interval written): valid only in the chunk it was given in.
  struct Kept {
    uint64_t id = 0;
    uint32_t chunk = 0;
  };
  // IdOf, answered from `*kept` when it holds this chunk's id, else looked up and kept there:
  // a repeated lookup is a probe of a table as large as the chunk's contexts, on cold lines.
  // The caller keeps `*kept` with `context` and resets it when that changes.
  uint64_t IdOf(const ContextSnapshot& context, uint32_t chunk, Kept* kept) {
    if (kept->id == 0 || kept->chunk != chunk) *kept = Kept{IdOf(context, chunk), chunk};
    return kept->id;
  }

  // The contexts that got an id in chunk `chunk`, in id order (none when no IdOf call named that
  // chunk: the table still holds an earlier chunk's).
  const std::vector<std::pair<uint64_t, ContextSnapshot>>& chunk_contexts(uint32_t chunk) const {
    static const std::vector<std::pair<uint64_t, ContextSnapshot>> kNone;
    return chunk == chunk_ ? contexts_ : kNone;
  }

 private:
  uint64_t next_id_ = 1;
  uint32_t chunk_ = 0;
  std::vector<std::pair<uint64_t, ContextSnapshot>> contexts_;  // this chunk's, in id order
  FlatIndex index_;                                             // positions in contexts_
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_JFR_EVENTS_CONTEXT_IDS_H_
