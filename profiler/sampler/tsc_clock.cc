#include "profiler/sampler/tsc_clock.h"

#include <cpuid.h>
#include <time.h>
#include <x86intrin.h>

namespace ctxprof {
namespace {

int64_t ReadNanos(clockid_t clock) {
  timespec now;
  clock_gettime(clock, &now);
  return static_cast<int64_t>(now.tv_sec) * static_cast<int64_t>(kNanosPerSecond) + now.tv_nsec;
}

// One TSC reading bracketed as tightly as possible by one `clock` reading: retries until the
// TSC reads around clock_gettime are close (no preemption or interrupt in between).
void ReadTogether(clockid_t clock, uint64_t* tsc, int64_t* nanos) {
  uint64_t best_gap = UINT64_MAX;
  for (int attempt = 0; attempt < 16; ++attempt) {
    const uint64_t before = __rdtsc();
    const int64_t clock_nanos = ReadNanos(clock);
    const uint64_t after = __rdtsc();
    if (after - before < best_gap) {
      best_gap = after - before;
      *tsc = before + (after - before) / 2;
      *nanos = clock_nanos;
    }
  }
}

}  // namespace

MonotonicClock::MonotonicClock(uint64_t origin_nanos) : origin_nanos_(origin_nanos) {
  anchor_ticks_ = Now();
  anchor_epoch_nanos_ = ReadNanos(CLOCK_REALTIME);
}

uint64_t MonotonicClock::Now() const {
  return static_cast<uint64_t>(ReadNanos(CLOCK_MONOTONIC)) - origin_nanos_;
}

bool TscClock::CpuHasInvariantTsc() {
  unsigned int eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_max(0x80000000, nullptr) < 0x80000007) return false;
  if (!__get_cpuid(0x80000007, &eax, &ebx, &ecx, &edx)) return false;
  return (edx & (1u << 8)) != 0;
}

StatusOr<std::unique_ptr<TscClock>> TscClock::Create() {
  if (!CpuHasInvariantTsc()) {
    return Status::Unavailable(
        "the CPU does not report an invariant TSC (CPUID 0x80000007 EDX bit 8)", 0);
  }
  uint64_t tsc_start = 0, tsc_end = 0;
  int64_t mono_start = 0, mono_end = 0;
  ReadTogether(CLOCK_MONOTONIC, &tsc_start, &mono_start);
  const timespec window = {0, static_cast<long>(kCalibrationNanos)};
  nanosleep(&window, nullptr);
  ReadTogether(CLOCK_MONOTONIC, &tsc_end, &mono_end);
  if (tsc_end <= tsc_start || mono_end <= mono_start) {
    return Status::Unavailable("the TSC did not advance during calibration", 0);
  }
  const long double rate = static_cast<long double>(tsc_end - tsc_start) * kNanosPerSecond /
                           static_cast<long double>(mono_end - mono_start);
  // Below 100 MHz is not a real TSC (a hypervisor emulating one badly, or a broken calibration).
  if (rate < 1e8L) {
    return Status::Unavailable("the calibrated TSC rate is implausible (" +
                                   std::to_string(static_cast<uint64_t>(rate)) + " Hz)",
                               0);
  }
  uint64_t anchor_ticks = 0;
  int64_t anchor_epoch_nanos = 0;
  ReadTogether(CLOCK_REALTIME, &anchor_ticks, &anchor_epoch_nanos);
  return std::unique_ptr<TscClock>(
      new TscClock(static_cast<uint64_t>(rate), anchor_ticks, anchor_epoch_nanos));
}

uint64_t TscClock::Now() const { return __rdtsc(); }

std::unique_ptr<Clock> CreateClock(ClockKind kind, std::string* note) {
  note->clear();
  if (kind == ClockKind::kTsc) {
    StatusOr<std::unique_ptr<TscClock>> tsc = TscClock::Create();
    if (tsc.ok()) return std::move(tsc.value());
    *note = "clock=tsc: " + tsc.status().message() + "; using clock=monotonic instead";
  }
  return std::make_unique<MonotonicClock>();
}

}  // namespace ctxprof
