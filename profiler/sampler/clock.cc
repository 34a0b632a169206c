#include "profiler/sampler/clock.h"

namespace ctxprof {

int64_t Clock::EpochNanosAt(uint64_t ticks) const {
  // Signed difference: a tick before the anchor maps to an earlier wall time.
  const int64_t delta_ticks = static_cast<int64_t>(ticks - AnchorTicks());
  const long double nanos_per_tick = 1e9L / static_cast<long double>(TicksPerSecond());
  return AnchorEpochNanos() + static_cast<int64_t>(delta_ticks * nanos_per_tick);
}

}  // namespace ctxprof
