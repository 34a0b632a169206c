// Clock: the one time base of a recording, in ticks.
//
// Implementations: TscClock (rdtsc, only when the TSC is invariant; ticks/s calibrated against
// CLOCK_MONOTONIC) and MonotonicClock (CLOCK_MONOTONIC nanoseconds minus an origin, 0 unless the
// session counts in the JDK recorder's ticks, jfrsync=; ticks/s = 1e9). One Clock instance
// serves a whole recording, so every chunk of a file shares it.
//
// Thread safety: all methods are const and safe from any thread; Now() is async-signal-safe.
#ifndef CTXPROF_PROFILER_SAMPLER_CLOCK_H_
#define CTXPROF_PROFILER_SAMPLER_CLOCK_H_

#include <cstdint>

namespace ctxprof {

inline constexpr uint64_t kNanosPerMicro = 1000;
inline constexpr uint64_t kNanosPerMilli = 1000 * 1000;
inline constexpr uint64_t kNanosPerSecond = 1000 * 1000 * 1000;

// clock= option: which Clock a session uses (tsc_clock.h: CreateClock).
enum class ClockKind : uint8_t { kTsc, kMonotonic };

class Clock {
 public:
  virtual ~Clock() = default;
  // Current time in ticks. Async-signal-safe.
  virtual uint64_t Now() const = 0;
  virtual uint64_t TicksPerSecond() const = 0;
  // "tsc" or "monotonic": recorded in the recording's settings.
  virtual const char* Name() const = 0;
  // A (ticks, nanoseconds since the Unix epoch) pair read together at construction: converts
  // ticks to wall time for chunk headers.
  virtual uint64_t AnchorTicks() const = 0;
  virtual int64_t AnchorEpochNanos() const = 0;
  // A monotonic clock's ticks are CLOCK_MONOTONIC nanoseconds minus this (0 for the TSC).
  virtual uint64_t MonotonicOrigin() const { return 0; }

  // Wall time of `ticks` in nanoseconds since the Unix epoch.
  int64_t EpochNanosAt(uint64_t ticks) const;
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SAMPLER_CLOCK_H_
