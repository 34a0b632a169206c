#include "profiler/jfr_events/context_runs.h"

#include <algorithm>

#include "context/dictionary.h"

namespace ctxprof {

uint64_t ContextRuns::Track(int32_t tid, uint32_t thread_key, uint64_t first_ticks,
                            uint64_t last_ticks, const ContextSnapshot& context,
                            uint64_t* pending_bytes) {
  Run& run = runs_[tid];
  if (run.open &&
      (run.context != context || run.thread_key != thread_key || last_ticks < run.last_ticks)) {
    End(&run, first_ticks);
  }
  if (context.empty()) return 0;
  const uint64_t first = run.previous_context != context
                             ? std::max(first_ticks, std::min(run.previous_end, last_ticks))
                             : first_ticks;
  if (run.open) {
    run.first_ticks = std::min(run.first_ticks, first);
    run.last_ticks = last_ticks;
    return run.context_id;
  }
  run.open = true;
  run.context = context;
  run.context_id = ids_->IdOf(context, chunk_->chunk_number());
  run.thread_key = thread_key;
  run.first_ticks = first;
  run.last_ticks = last_ticks;
  MarkValues(context, pending_bytes);
  return run.context_id;
}

uint64_t ContextRuns::CoverInstant(uint32_t thread_key, uint64_t ticks,
                                   const ContextSnapshot& context, uint64_t* pending_bytes) {
  if (context.empty()) return 0;
  MarkValues(context, pending_bytes);
  const uint64_t context_id = ids_->IdOf(context, chunk_->chunk_number());
  Write(ticks, DurationTicks(ticks, ticks), thread_key, context_id, context);
  return context_id;
}

void ContextRuns::MarkValues(const ContextSnapshot& context, uint64_t* pending_bytes) {
  for (size_t slot = 0; slot < attribute_count_; slot++) {
    const uint32_t id = context.attributes[slot];
    if (id != Dictionary::kUnsetId) values_->Mark(id, chunk_->chunk_number(), pending_bytes);
  }
}

void ContextRuns::EndAll() {
  for (auto& [tid, run] : runs_) {
    if (run.open) End(&run, UINT64_MAX);
  }
}

uint64_t ContextRuns::DurationTicks(uint64_t first_ticks, uint64_t last_ticks) const {
  return chunk_->TicksJustAfter(last_ticks) - first_ticks;
}

void ContextRuns::End(Run* run, uint64_t next_ticks) {
  run->open = false;
  uint64_t duration = DurationTicks(run->first_ticks, run->last_ticks);
  if (next_ticks > run->last_ticks && run->first_ticks + duration > next_ticks) {
    // Samples closer than ~2 ns: not overlapping the next run wins over the end margin.
    duration = next_ticks - run->first_ticks;
  }
  run->previous_end = run->first_ticks + duration;
  run->previous_context = run->context;
  Write(run->first_ticks, duration, run->thread_key, run->context_id, run->context);
}

void ContextRuns::Write(uint64_t start_ticks, uint64_t duration_ticks, uint32_t thread_key,
                        uint64_t context_id, const ContextSnapshot& context) {
  chunk_->NoteEventTicks(start_ticks + duration_ticks);
  encoder_->AppendContext(ContextEventFields{start_ticks, duration_ticks, thread_key, context_id,
                                             &context, attribute_count_},
                          &chunk_->out());
}

}  // namespace ctxprof
