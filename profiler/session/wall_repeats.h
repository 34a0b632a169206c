// WallRepeats: turns the wall sampler's repeat records (kSampleRepeatLast, wall_engine.h) back
// into samples: a copy of the thread's last wall sample (frames, state, context, virtual thread)
// at the repeat's time with the repeat's weight. A thread that did not run since that sample is
// still where it showed it; the sampler only sends a repeat for such a thread.
//
// A repeat for a thread with no wall sample yet (its first signal's handler has not published
// before the repeat was drained, or that sample was dropped) passes as it is: a wall sample of
// that weight with no frames and no context, so the time is still counted.
//
// Memory: one record header plus the frames of each thread's last wall sample, for the threads
// that had one in the last minute of samples (Forget drops the others): ~2 KiB per thread at
// depth=128.
//
// Thread safety: none; used by the session's background thread only (Session::DrainSamples).
#ifndef CTXPROF_PROFILER_SESSION_WALL_REPEATS_H_
#define CTXPROF_PROFILER_SESSION_WALL_REPEATS_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <unordered_map>

#include "profiler/sampler/sample.h"

namespace ctxprof {

class WallRepeats {
 public:
  WallRepeats() : scratch_(new SampleRecord()) {}

  // Calls emit(record) for every record but a repeat, which it replaces as above; remembers
  // each thread's last wall sample. The record passed to emit is valid during the call only.
  template <typename Emit>
  void Expand(const SampleRecord& record, Emit emit) {
    if (record.kind != SampleKind::kWall) {
      emit(record);
    } else if ((record.flags & kSampleRepeatLast) == 0) {
      Remember(record);
      emit(record);
    } else {
      emit(Repeat(record));
    }
  }

  // Forgets the threads whose last wall sample (or repeat) is older than `ticks`.
  void Forget(uint64_t ticks);

 private:
  struct Last {
    std::unique_ptr<SampleRecord> record;  // header and frames[0..frame_count)
    uint64_t used_ticks;                   // the last sample or repeat of the thread
  };

  void Remember(const SampleRecord& record);
  const SampleRecord& Repeat(const SampleRecord& repeat);

  std::unordered_map<pid_t, Last> last_;
  std::unique_ptr<SampleRecord> scratch_;
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SESSION_WALL_REPEATS_H_
