// TscClock and MonotonicClock: the two Clock implementations (profiler/clock.h), and the factory
// that honours clock=tsc|monotonic.
//
// TscClock reads rdtsc. It is used only when the TSC is invariant (CPUID 0x80000007 EDX bit 8,
// "constant_tsc nonstop_tsc" in /proc/cpuinfo terms): then it ticks at a constant rate in every
// P-/C-state and is synchronised across cores by the kernel, so readings taken on different CPUs
// are comparable. Ticks per second are calibrated at construction against CLOCK_MONOTONIC over
// a short window (kCalibrationNanos); the anchor pairs a TSC reading with CLOCK_REALTIME.
//
// MonotonicClock reads CLOCK_MONOTONIC through clock_gettime (vDSO; async-signal-safe per POSIX),
// minus an origin: 0, or the JVM's (its JFR ticks) when the session is synchronised with the
// JDK's recorder (profiler/session/jdk_recorder.h).
//
// Thread safety: both are immutable after construction; Now() is async-signal-safe.
#ifndef CTXPROF_PROFILER_SAMPLER_TSC_CLOCK_H_
#define CTXPROF_PROFILER_SAMPLER_TSC_CLOCK_H_

#include <cstdint>
#include <memory>
#include <string>

#include "profiler/base/status.h"
#include "profiler/sampler/clock.h"

namespace ctxprof {

class MonotonicClock : public Clock {
 public:
  explicit MonotonicClock(uint64_t origin_nanos = 0);
  uint64_t Now() const override;
  uint64_t TicksPerSecond() const override { return kNanosPerSecond; }
  const char* Name() const override { return "monotonic"; }
  uint64_t AnchorTicks() const override { return anchor_ticks_; }
  int64_t AnchorEpochNanos() const override { return anchor_epoch_nanos_; }
  uint64_t MonotonicOrigin() const override { return origin_nanos_; }

 private:
  const uint64_t origin_nanos_;
  uint64_t anchor_ticks_ = 0;
  int64_t anchor_epoch_nanos_ = 0;
};

class TscClock : public Clock {
 public:
  static constexpr uint64_t kCalibrationNanos = 20 * kNanosPerMilli;

  // True when this CPU reports an invariant TSC (CPUID leaf 0x80000007, EDX bit 8).
  static bool CpuHasInvariantTsc();
  // Fails with kUnavailable saying why when the TSC is not safe to use as a clock.
  static StatusOr<std::unique_ptr<TscClock>> Create();

  uint64_t Now() const override;
  uint64_t TicksPerSecond() const override { return ticks_per_second_; }
  const char* Name() const override { return "tsc"; }
  uint64_t AnchorTicks() const override { return anchor_ticks_; }
  int64_t AnchorEpochNanos() const override { return anchor_epoch_nanos_; }

 private:
  TscClock(uint64_t ticks_per_second, uint64_t anchor_ticks, int64_t anchor_epoch_nanos)
      : ticks_per_second_(ticks_per_second),
        anchor_ticks_(anchor_ticks),
        anchor_epoch_nanos_(anchor_epoch_nanos) {}

  const uint64_t ticks_per_second_;
  const uint64_t anchor_ticks_;
  const int64_t anchor_epoch_nanos_;
};

// The clock for `kind`. For kTsc on a machine without an invariant TSC it returns a
// MonotonicClock and sets *note to a message saying why (the caller reports it once);
// otherwise *note is cleared. Never fails.
std::unique_ptr<Clock> CreateClock(ClockKind kind, std::string* note);

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SAMPLER_TSC_CLOCK_H_
