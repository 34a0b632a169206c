// SampleRecord: what the signal handler (and the event recorder) publishes and the background
// writer consumes.
//
// The meeting point of the sampler (profiler/sampler/: the signal handler and the event
// recorder fill records in the SampleBuffer) and the session (profiler/session/: its
// background thread hands them to the Aggregator and the JFR writer). A record is a
// fixed-size POD so a producer can fill a preallocated slot without allocating; frames are raw
// (a pc, or a jmethodID + bci) and are symbolized later on the background thread, never by the
// producer.
//
// Besides samples (kCpu, kWall) a record can be an event the runtime reported on the thread it
// happened on (event_recorder.h): a sampled allocation, a contended monitor enter, a park. Such a
// record's `event` fields say what happened; its `ticks` is when the event ended (for the lock
// events, when the wait ended), so every record of a thread sorts by the time it was published.
#ifndef CTXPROF_PROFILER_SAMPLER_SAMPLE_H_
#define CTXPROF_PROFILER_SAMPLER_SAMPLE_H_

#include <cstdint>

#include "context/context_block.h"
#include "profiler/base/event_kind.h"
#include "profiler/sampler/stack_depth.h"

namespace ctxprof {

// How a frame was captured; the writer maps these to JFR frame types.
enum class FrameKind : uint8_t {
  kNative = 0,           // id = instruction pointer (return address for non-leaf frames)
  kJavaInterpreted = 1,  // id = jmethodID, bci valid
  kJavaJit = 2,          // id = jmethodID, bci valid
  kJavaInlined = 3,      // id = jmethodID, bci valid
  kJavaNative = 4,       // id = jmethodID of a native method
  kKernel = 5,           // id = kernel address (perf_callchain.h), bci as for kNative
  kJavaUnwalkable = 6,   // the thread was in Java code the JVM could not walk; id = the JVM's
                         // reason (AsyncGetCallTrace's error code, negated). A whole stack.
};

// Native frames use `bci` to say what the pc is: the interrupted instruction (the leaf), or a
// return address, which symbolizers look up at pc - 1 so that a call ending a function is not
// attributed to the next function.
inline constexpr int32_t kNativeInterruptedPc = 0;
inline constexpr int32_t kNativeReturnAddress = -1;

struct RawFrame {
  uint64_t id;
  int32_t bci;  // Java: bytecode index (-1 unknown); native: one of the kNative* above
  FrameKind kind;
};

// Which engine produced a sample (the "engine really used" after fallbacks); kRuntime for the
// events the runtime reports (event_recorder.h).
enum class Engine : uint8_t {
  kPerfCpuClock = 0,
  kCpuTimer = 1,
  kITimer = 2,
  kWall = 3,
  kRuntime = 4
};

enum SampleFlags : uint8_t {
  kSampleTruncated = 1 << 0,    // the stack walk stopped early (depth limit or a fault)
  kSampleContextBusy = 1 << 1,  // the context read hit a write in progress; context is empty
  kSampleContextTorn = 1 << 2,  // the context kept changing during the read; context is empty
  // A wall record of the wall sampler, not of the handler: the thread did not run since its
  // wall sample of ticks `event.amount`, which stands for `weight` more intervals (no frames, no
  // context; the session repeats that sample, profiler/session/wall_repeats.h).
  kSampleRepeatLast = 1 << 3,
};

// Thread state at the sample, as in JFR's jdk.types.ThreadState.
enum class ThreadState : uint8_t { kRunning = 0, kSleeping = 1, kUnknown = 2 };

// The extra fields of a runtime event (kAllocation, kMonitorEnter, kThreadPark); zero in samples.
struct EventFields {
  // kAllocation: bytes allocated that this sample stands for (its JFR weight);
  // kMonitorEnter, kThreadPark: ticks the thread waited; the wait began at ticks - amount.
  uint64_t amount;
  uint64_t object_bytes;  // kAllocation: size of the sampled object
  // kThreadPark: the park's timeout in nanoseconds, or kNoParkTimeout; for an absolute deadline
  // (LockSupport.parkUntil) the deadline in milliseconds since the epoch, with park_absolute set.
  int64_t park_time;
  // Class of the allocated object, of the monitor, or of the park blocker: an id in the event
  // recorder's class-name dictionary (event_recorder.h), 0 = unknown.
  uint32_t class_id;
  bool park_absolute;
  // kAllocation with the live option: the runtime's reference to the sampled object
  // (profiler/jfr_events/live_objects.h), owned by whoever consumes the record; 0 = none.
  uint64_t object_ref;
};
inline constexpr int64_t kNoParkTimeout = INT64_MIN;

struct SampleRecord {
  uint64_t ticks;   // Clock::Now() at handler entry (profiler/clock.h); end of an event
  int32_t tid;      // kernel thread id of the sampled thread
  SampleKind kind;  // profiler/base/event_kind.h
  Engine engine;
  uint8_t flags;  // SampleFlags
  ThreadState state;
  uint32_t weight;  // intervals this sample stands for (>= 1); 1 for events
  // The java.lang.Thread id of the virtual thread mounted on `tid` when the sample was taken
  // (a JVM's carrier thread, JDK 21+); 0 when the sample belongs to the OS thread itself.
  uint64_t virtual_thread_id = 0;
  ContextSnapshot context;  // dictionary ids, resolved by the writer
  EventFields event;        // runtime events only
  uint32_t frame_count;     // frames[0] is the leaf
  RawFrame frames[kMaxStackDepth];
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SAMPLER_SAMPLE_H_
