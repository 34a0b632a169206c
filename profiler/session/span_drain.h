// SpanDrain: the one reader of the process's span logs (context/span_log.h) during a
// recording: drains every thread's closed spans, converts their times to the session's clock and
// hands them to the JFR writer (profiler/jfr_events/span_intervals.h).
//
// Clocks: a span time is either a TSC reading or CLOCK_MONOTONIC nanoseconds (kMonotonicFlag).
// The one of the session's kind passes unchanged (the TSC for clock=tsc, the default; monotonic
// nanoseconds for clock=monotonic); the other is mapped through two (TSC, monotonic) pairs read
// back to back at the last two drains, interpolating between them (or extrapolating from the
// last one), so the slew of CLOCK_MONOTONIC against the TSC only counts since the previous
// drain. A pair is read as TSC, monotonic, TSC and kept only when the two TSC reads are close,
// so a preemption between them does not skew it. An interval's begin takes the converted value
// of the previous interval's end (BeginTicks), so consecutive intervals abut exactly.
//
// Thread safety: none; only the recording's thread (the session's background thread) calls it,
// which makes it the logs' single reader.
#ifndef CTXPROF_PROFILER_SESSION_SPAN_DRAIN_H_
#define CTXPROF_PROFILER_SESSION_SPAN_DRAIN_H_

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "context/context_map.h"
#include "profiler/jfr_events/span_intervals.h"
#include "profiler/sampler/clock.h"

namespace ctxprof {

class SpanDrain {
 public:
  // `map` is the process's context map (its logs and blocks); `clock` the session's. Discards
  // what the logs hold already: spans closed and drops counted before the recording.
  SpanDrain(ContextMap* map, const Clock* clock);

  // The interval a thread has open: since begin_ticks with `context`, run by virtual_thread_id
  // (0: the thread itself), as read at read_ticks.
  struct OpenInterval {
    int32_t tid;
    uint64_t virtual_thread_id;
    uint64_t begin_ticks;
    uint64_t read_ticks;
    ContextSnapshot context;
  };
  // Hands every span closed since the last call to `emit`, converted; *timed receives the tids
  // of the threads that own a log. Then calls `open` with each of them's open interval, read
  // before the drain: every span that ended before it began has been emitted.
  void Drain(const std::function<void(const SpanInterval&)>& emit,
             std::unordered_set<int32_t>* timed,
             const std::function<void(const OpenInterval&)>& open);
  // At the recording's end: each thread's span still open, as if it closed now.
  void DrainOpen(const std::function<void(const SpanInterval&)>& emit);

  uint64_t dropped() const { return dropped_; }

 private:
  struct Pair {
    uint64_t tsc = 0;
    uint64_t monotonic_nanos = 0;
  };
  static Pair ReadPair();
  // tsc_per_nano_now_ := the rate between the last two pairs (the calibration while there is
  // one), once per new pair rather than per converted time.
  void UpdateRate();
  // Each owned log's open interval, its begin still in span ticks; `timed` (if not null)
  // receives the tids of the threads that own a log.
  std::vector<OpenInterval> ReadOpenIntervals(std::unordered_set<int32_t>* timed) const;
  uint64_t ToSessionTicks(uint64_t span_ticks) const;
  // An interval's begin is the previous one's end (one write ends one and starts the next): it
  // takes that end's converted value, so that the two abut exactly although the mapping moved
  // between the drains that converted them. Keyed by the thread, or the virtual thread, whose
  // intervals they are (SpanOwnerKey).
  struct Boundary {
    uint64_t span_ticks;
    uint64_t session_ticks;
  };
  static constexpr size_t kMaxBoundaries = 1 << 16;
  uint64_t BeginTicks(int32_t tid, uint64_t virtual_thread_id, uint64_t span_ticks);

  ContextMap* const map_;
  const Clock* const clock_;
  const bool session_is_tsc_;
  // Monotonic nanoseconds count from the session clock's origin (the JVM's with jfrsync=).
  const uint64_t origin_;
  const double tsc_per_nano_;  // the session clock's calibration, until two pairs are known
  Pair previous_;
  Pair latest_;
  double tsc_per_nano_now_ = 1.0;
  uint64_t dropped_ = 0;
  std::unordered_map<uint64_t, Boundary> last_end_;
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SESSION_SPAN_DRAIN_H_
