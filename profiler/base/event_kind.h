// SampleKind: what a sampler record or a recorded event is, the one vocabulary of the sampler,
// the recording and the ctxprof tool. Two kinds are samples, taken by a sampling engine at an
// interval (cpu, wall); three are events the runtime reports one by one on the thread they
// happen on (a sampled allocation, a contended monitor enter, a park).
//
// SampleRecord (profiler/sampler/sample.h) carries the kind as one byte with these values. The
// names are those the ctxprof tool writes: labels, pprof sample types, OTLP profiles.
//
// Thread safety: constants and pure functions only; async-signal-safe.
#ifndef CTXPROF_PROFILER_BASE_EVENT_KIND_H_
#define CTXPROF_PROFILER_BASE_EVENT_KIND_H_

#include <cstdint>

namespace ctxprof {

enum class SampleKind : uint8_t {
  kCpu = 0,           // cpu, ctimer or itimer engine: the thread was on CPU
  kWall = 1,          // wall engine: the thread was sampled regardless of its state
  kAllocation = 2,    // a sampled allocation (jdk.ObjectAllocationSample)
  kMonitorEnter = 3,  // a contended monitor enter (jdk.JavaMonitorEnter)
  kThreadPark = 4,    // a LockSupport.park wait (jdk.ThreadPark)
  // Any other recorded event with a stack that the tool reads (`--events TYPE`, the JDK's or
  // the application's); never a sampler record, and not in kSampleKinds: the tool names and
  // measures it by its event type.
  kEvent = 5,
};

// Every kind, in the order outputs list them (pprof sample types, OTLP profiles).
inline constexpr SampleKind kSampleKinds[] = {SampleKind::kCpu, SampleKind::kWall,
                                              SampleKind::kAllocation, SampleKind::kMonitorEnter,
                                              SampleKind::kThreadPark};

// True for the kinds a sampling engine takes at an interval (cpu, wall: a weight counts
// intervals); false for the events the runtime reports (a weight is the event's measure).
inline constexpr bool IsSample(SampleKind kind) {
  return kind == SampleKind::kCpu || kind == SampleKind::kWall;
}

// "cpu", "wall", "alloc", "monitor" or "park".
inline constexpr const char* SampleKindName(SampleKind kind) {
  switch (kind) {
    case SampleKind::kCpu:
      return "cpu";
    case SampleKind::kWall:
      return "wall";
    case SampleKind::kAllocation:
      return "alloc";
    case SampleKind::kMonitorEnter:
      return "monitor";
    case SampleKind::kThreadPark:
      return "park";
    case SampleKind::kEvent:
      return "event";
  }
  return "cpu";
}

// What a kind measures, as pprof and OTLP name units: "bytes" (allocations) or "nanoseconds"
// (CPU and wall time, lock waits).
inline constexpr const char* MeasureUnit(SampleKind kind) {
  return kind == SampleKind::kAllocation ? "bytes" : "nanoseconds";
}

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_BASE_EVENT_KIND_H_
