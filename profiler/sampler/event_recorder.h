// EventRecorder: records the events a runtime reports on the thread they happen on (a sampled
// allocation, a contended monitor enter, a LockSupport.park wait) into the session's SampleBuffer,
// with that thread's context, under the session's alloc=, lock= and select= rules (options.h).
// The JVM layer (jni/jvm_events.h) calls it from JVMTI callbacks and its Unsafe.park hook.
//
// One event, on its own thread (normal context, never a signal handler): Begin* joins the session
// (nothing to do without one), reads the context block with the seqlock reader, applies the rules
// below and, for a kept event, claims a slot and fills header, context and event fields (a full
// buffer drops and counts it); the caller writes the stack and class id; Publish (or the Event's
// destructor) publishes and leaves. Nothing here blocks: a bounded CAS probe, a bounded seqlock
// read, a thread-local random draw; only the caller's walk and class lookup cost, for kept events.
//
// Ordering contract with the writer: `ticks` is the publication time (a wait's end), read from the
// session's clock like a sample's, so the reorderer (profiler/session/sample_reorderer.h) sorts
// events and samples alike; a wait starts at `ticks - event.amount`. A thread's context cannot
// change while it waits, so the context read at the end is the whole wait's.
//
// Session lifetime (the signal handler's Dekker pattern, signal_handler.h): Activate() stores the
// session in plain globals, then sets `enabled` (seq_cst); Begin* increments `in_flight` (seq_cst)
// and then loads `enabled`; Deactivate() clears `enabled`, then waits for `in_flight` to be zero.
// So after Deactivate() no event touches the session's buffer. An Event is in flight from Begin*
// to Publish: callers must not block in between (the park hook times the park before Begin*).
//
// Selection:
//  * Lock events (kMonitorEnter, kThreadPark) are kept when the wait lasted at least lock= (0 keeps
//    all); select=if-context also keeps every wait of a thread whose context is set. A wait that
//    began before the session started is dropped.
//  * Allocations: the runtime samples at exponentially distributed distances of mean I bytes
//    (HotSpot's ThreadHeapSampler, JEP 331), so an object of s bytes is sampled with probability
//    p(s, I) = 1 - exp(-s / I); weight s / p(s, I) (AllocationWeight) is unbiased for any size.
//    select=all: I = alloc=. select=if-context: I = alloc / kContextIntervalDivisor; in a context
//    every sample is kept (weight s / p(s, I)); outside, kept with probability p(s, alloc) /
//    p(s, I) (KeepProbability), weight s / p(s, alloc), which is exactly a sampling at alloc=.
//
// Class names: the JVM layer interns each kept event's class name ("[B") in class_names(), a
// process-wide Dictionary (context/dictionary.h) that lives until the process ends, so ids stay
// valid for every session's writer; a hit is lock-free, a miss a bounded insert (no allocation).
//
// Thread safety: Activate/Deactivate are serialised by the caller (Profiler's control mutex);
// Begin*/Publish may run on any number of threads concurrently.
#ifndef CTXPROF_PROFILER_SAMPLER_EVENT_RECORDER_H_
#define CTXPROF_PROFILER_SAMPLER_EVENT_RECORDER_H_

#include <atomic>
#include <cstdint>

#include "context/context_map.h"
#include "context/dictionary.h"
#include "profiler/sampler/clock.h"
#include "profiler/sampler/sample_buffer.h"

namespace ctxprof {

// The event rules of a session (from options.h: alloc=, lock=, select=).
struct EventRules {
  uint64_t alloc_interval_bytes = 0;  // 0 = no allocation events
  bool lock_enabled = false;
  uint64_t lock_threshold_ns = 0;
  bool if_context = false;  // select=if-context
  bool live = false;        // allocation records carry a reference to their object (live)
};

class EventRecorder {
 public:
  // select=if-context samples allocations this many times finer than alloc=.
  static constexpr uint64_t kContextIntervalDivisor = 16;

  struct Session {
    SampleBuffer* buffer = nullptr;
    const Clock* clock = nullptr;
    ContextMap* context_map = nullptr;
    int depth = 0;
    EventRules rules;
  };

  // One event between Begin* and Publish. Not copyable; destroying it publishes a claimed record
  // that was not published yet and leaves the session.
  class Event {
   public:
    Event() = default;
    ~Event();
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;

    // The record to complete (frames, frame_count, event.class_id); valid from a Begin* that
    // returned true until Publish.
    SampleRecord* record() const { return record_; }
    // How many frames the record holds (the session's depth).
    int max_frames() const { return max_frames_; }
    void Publish();

   private:
    friend class EventRecorder;
    SampleBuffer* buffer_ = nullptr;
    SampleRecord* record_ = nullptr;
    int max_frames_ = 0;
    std::atomic<int32_t>* in_flight_ = nullptr;  // the stripe entered (InFlight), if any
  };

  static void Activate(const Session& session);
  // Returns when no event can still be using the session.
  static void Deactivate();

  // The runtime's allocation sampling interval for `rules` (0 when there is no allocation
  // sampling): alloc=, or alloc= / kContextIntervalDivisor (at least 1) with select=if-context.
  static uint64_t SamplingInterval(const EventRules& rules);

  // An allocation of `object_bytes` sampled on the calling thread at SamplingInterval(). True
  // when it is kept: *event holds the record (kind, times, context, amount = weight,
  // object_bytes) for the caller to complete.
  static bool BeginAllocation(uint64_t object_bytes, Event* event);
  // The start of a wait, for BeginWait: the session clock's ticks now, or 0 without a session.
  static uint64_t WaitStartTicks();
  // A wait (kMonitorEnter or kThreadPark) of the calling thread that began at `start_ticks`
  // (WaitStartTicks()) and ends now. True when it is kept (then as BeginAllocation). A start
  // before this session's start (another session's, whose clock may differ) or after now drops
  // the wait.
  static bool BeginWait(SampleKind kind, uint64_t start_ticks, Event* event);

  // The weight of a sampled object: s / (1 - exp(-s / interval)), the bytes it stands for.
  static uint64_t AllocationWeight(uint64_t object_bytes, uint64_t interval_bytes);
  // Outside a context with select=if-context: the probability of keeping a sample taken at
  // `fine_interval` so that the kept ones are a sampling at `coarse_interval`.
  static double KeepProbability(uint64_t object_bytes, uint64_t coarse_interval,
                                uint64_t fine_interval);

  // The process-wide dictionary of class names (see above); nullptr only if it could not be
  // created (then events carry class id 0).
  static Dictionary* class_names();

  // Tests: makes the calling thread's thinning draws reproducible (seed != 0).
  static void SeedThreadRandom(uint64_t seed);

 private:
  // Joins the session; false (and nothing held) when there is none.
  static bool Enter(Event* event);
  // Claims a slot and fills the common header; false when the buffer is full (counted).
  static bool Claim(SampleKind kind, uint64_t ticks, const ContextSnapshot& context,
                    uint8_t context_flags, Event* event);
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SAMPLER_EVENT_RECORDER_H_
