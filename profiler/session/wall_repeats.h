// WallRepeats: turns the wall sampler's repeat records (kSampleRepeatLast, wall_engine.h) back
// into samples: a copy of the wall sample the repeat names (its ticks in event.amount: frames,
// state, context, virtual thread) at the repeat's time with the repeat's weight. A thread that did
// not run since that sample is still where it showed it; the sampler only sends a repeat for such
// a thread, stamped with a time at which it proved the thread still there (never later: the
// thread may have woken since).
//
// The drain hands records over in slot order, not in the order they were published (a drain that
// wraps around the ring, sample_buffer.h), so a repeat may arrive after its thread's next sample,
// or before the sample it repeats. Hence a repeat names its sample: each thread's two latest wall
// samples (by ticks) are kept, and a repeat whose sample has not arrived yet is held until it does.
// A repeat whose sample is older than both kept ones passes as it is: a wall sample of that weight
// with no frames and no context, so the time is still counted but no stack is guessed.
//
// Memory: two record headers plus their frames for each thread that had a wall sample in the
// last minute of samples (Forget drops the others, and with them any repeat still held, which
// cannot happen while the drain runs: a repeat names a published sample): ~4 KiB per thread at
// depth=128.
//
// Thread safety: none; used by the session's background thread only (Session::DrainSamples).
#ifndef CTXPROF_PROFILER_SESSION_WALL_REPEATS_H_
#define CTXPROF_PROFILER_SESSION_WALL_REPEATS_H_

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "profiler/sampler/sample.h"

namespace ctxprof {

class WallRepeats {
 public:
  WallRepeats() : scratch_(new SampleRecord()) {}

  // Calls emit(record) for every record but a repeat, which it replaces as above (now, or when
  // the sample it names arrives); remembers each thread's latest wall samples. The record passed
  // to emit is valid during the call only.
  template <typename Emit>
  void Expand(const SampleRecord& record, Emit emit) {
    if (record.kind != SampleKind::kWall) {
      emit(record);
    } else if ((record.flags & kSampleRepeatLast) == 0) {
      Last& last = Remember(record);
      emit(record);
      while (const SampleRecord* repeat = NextHeldRepeatOf(&last, record)) emit(*repeat);
    } else if (const SampleRecord* repeat = Repeat(record)) {
      emit(*repeat);
    }
  }

  // Forgets the threads whose last wall sample (or repeat) is older than `ticks`.
  void Forget(uint64_t ticks);

 private:
  struct Held {
    uint64_t ticks;           // the repeat's
    uint64_t repeated_ticks;  // the sample it names
    uint32_t weight;
  };
  struct Last {
    // The thread's two latest wall samples by ticks (header and frames[0..frame_count)); older
    // is null until the second one.
    std::unique_ptr<SampleRecord> newest;
    std::unique_ptr<SampleRecord> older;
    uint64_t used_ticks = 0;  // the last sample or repeat of the thread
    std::vector<Held> held;   // repeats that came before the sample they name
  };

  // The entry of thread `tid`, made if it has none.
  Last& LastOf(pid_t tid);
  // Returns the thread's entry (it stays put while the drain runs: only Forget erases).
  Last& Remember(const SampleRecord& record);
  // The expansion of `repeat`, or null when it is held.
  const SampleRecord* Repeat(const SampleRecord& repeat);
  // The expansion of one held repeat that names `sample`, of `last`'s thread (forgetting it), or
  // null when none is left.
  const SampleRecord* NextHeldRepeatOf(Last* last, const SampleRecord& sample);
  // scratch_ := `sample` at the time and with the weight of a repeat.
  const SampleRecord& CopyAs(const SampleRecord& sample, uint64_t ticks, uint32_t weight);

  std::unordered_map<pid_t, Last> last_;
  // LastOf's entries by the tid's low bits (map nodes stay put until Forget erases them, which
  // empties this): every wall sample and repeat looks its thread up, and a hit costs a compare
  // where the map divides by its bucket count and chases a cold node.
  struct Recent {
    pid_t tid = 0;
    Last* last = nullptr;
  };
  std::array<Recent, 64> recent_{};
  std::unique_ptr<SampleRecord> scratch_;
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SESSION_WALL_REPEATS_H_
