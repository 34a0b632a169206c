// Session: one profiling session, from a successful start to its stop: what samples (the signal
// handler's activation, the engines, the thread registry), what reports runtime events (the
// runtime's event sources, alloc= and lock=) and what records (the sample buffer, the in-memory
// aggregator, the JFR recording, the background thread that drains the buffer into them).
//
// Construction and destruction undo each other. Start() acquires, in order:
//   1. clock, sample buffer, aggregator        (memory)
//   2. the signal handler's activation         (released: SignalHandler::Deactivate)
//   3. the CPU engine, after fallback          (released: its Stop, by its destructor)
//   4. the wall engine                         (released: its sampler thread joined)
//   5. the JFR recording, file= or repository= (released: the writer finishes the file)
//   6. the runtime's event sources, alloc= or  (released: RuntimeHooks::events_stop, then
//      lock= (EventRecorder::Activate, then        EventRecorder::Deactivate)
//      RuntimeHooks::events_start)
//   7. the thread registry, armed with 3 and 4 (released: every thread disarmed)
//   8. the background thread                   (released: woken and joined)
// Each is a member that releases itself in its destructor, declared in that order, so C++
// destroys them in reverse. A failure at any step returns its Status and the steps before it
// are undone by the destructors: nothing keeps running, with no unwinding code of our own.
// (Events in the buffer when a later step fails are dropped with it, and so are the object
// references that live allocation records hold.)
//
// Stop() is the orderly end, for a session that started: the background thread is joined
// (8), every thread disarmed (7), the engines stopped (4, 3), the handler deactivated (2) and
// the event sources turned off (6), so that no sample or event can still arrive; then the last
// records are drained (into the recording, which hands them to the aggregator, or straight into
// the aggregator without one) (5), and the recording is closed.
// That order differs from destruction in one place, on purpose: the recording outlives the
// engines and event sources so that it gets their last records. After Stop() the session's
// stats and aggregator stay readable.
//
// The background thread (named "ctxprof-writer" for top -H and /proc) drains the buffer, rescans
// threads and ticks the recording (symbolize, encode, flush, rotate), in that order, every
// kDrainInterval and at once when the doorbell rings: the buffer passed its high-water mark
// (sample_buffer.h), or the controller hands it a task or stops it. Each wake-up costs ~25 us
// of CPU on this VM, so the interval trades idle overhead (~1.3 ms of CPU per second at 20 ms)
// against buffer size: the default 2048 slots hold 100k samples/s for 20 ms, and ride out a
// drain that the scheduler or a JVM safepoint holds back for a while (docs/RELIABILITY.md).
// Under load the thread is one runnable thread among many and gets a fair share of a CPU (about
// 1 % with 200 busy threads on 2 CPUs; an unprivileged thread cannot raise its priority), so
// every millisecond of its work takes ~0.1 s: the cheap work that keeps samples and threads
// from being lost comes first, and nothing slow and avoidable runs on it (see Start).
//
// Draining: with a recording a drain only copies each record into the recording's reorderer
// (sample_reorderer.h); the aggregator gets it from the recording when it is written, in tick
// order (Recording::Open). The thread drains at every wake-up, again after the thread rescan,
// and between every Recording::kRecordsBetweenDrains records it writes and before the flush,
// so that the buffer is emptied every few hundred microseconds of the thread's CPU, whatever
// its share: when it had the whole drain and the aggregation up front and then the writing,
// a tick of 2-5 ms of CPU took 100-500 ms at 1 % of a CPU and left the buffer to fill
// (drops_bench, 32 interleaved pairs of runs: runs that dropped over 1 % went from 8 to 1, the
// mean dropped share from 0.56 % to 0.09 %, the median of the most records one drain found from
// 2,022 to 1,590 of 2,048 slots).
// Bound: while the session runs, no drain starts while the recording holds buffer= records not
// yet written (DrainUnlessBehind); the samples then wait in the buffer, whose fill the wall
// engine's backpressure reads, and a drain adds at most buffer= records, so the recording holds
// fewer than two buffers' worth (in the reorderer, each its header and frame_count frames).
// The first write error of the recording is printed by the background thread when it happens
// (one "ctxprof:" line on stderr, report.h); sampling and aggregation go on.
//
// Thread safety: Start, Stop, Stats, OnThreadStart/OnThreadEnd are called by one controller at
// a time (Profiler serialises them under its mutex); Stats may run while the background thread
// works. The aggregator is thread-safe on its own (aggregator.h).
#ifndef CTXPROF_PROFILER_SESSION_SESSION_H_
#define CTXPROF_PROFILER_SESSION_SESSION_H_

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "profiler/base/status.h"
#include "profiler/jfr_events/frame_resolver.h"
#include "profiler/jfr_events/live_objects.h"
#include "profiler/options.h"
#include "profiler/sampler/clock.h"
#include "profiler/sampler/doorbell.h"
#include "profiler/sampler/engine.h"
#include "profiler/sampler/event_recorder.h"
#include "profiler/sampler/sample_buffer.h"
#include "profiler/sampler/signal_handler.h"
#include "profiler/sampler/thread_registry.h"
#include "profiler/sampler/wall_engine.h"
#include "profiler/session/aggregator.h"
#include "profiler/session/recording.h"
#include "profiler/session/recording_dump.h"
#include "profiler/session/wall_repeats.h"
#include "profiler/symbols/kernel_symbols.h"

namespace ctxprof {

// What a runtime (the JVM layer, jni/jvm_agent.h) plugs into sessions. Every member is optional;
// an empty RuntimeHooks is a native program.
struct RuntimeHooks {
  // Java frames in the signal handler (signal_handler.h); combined with native frames as the
  // session's cstack= option says.
  JavaStackWalk java_walk = nullptr;
  // The virtual thread a sample of a carrier thread belongs to (signal_handler.h).
  VirtualThreadProbe virtual_thread = nullptr;
  // Where the native part of a mixed stack ends (signal_handler.h, cstack=dwarf|fp).
  JavaCodeProbe java_code = nullptr;
  // Resolvers for a session's JFR recording, made on the thread that starts the session.
  std::function<std::unique_ptr<FrameResolver>()> frame_resolver;
  std::function<std::unique_ptr<ThreadResolver>()> thread_resolver;
  // Run on the session's background thread first thing and last thing (the JVM layer attaches
  // it to the VM so that the resolvers may call JVMTI, and detaches it).
  std::function<void()> background_start;
  std::function<void()> background_end;
  // Runtime events (alloc=, lock=; profiler/sampler/event_recorder.h): events_start turns the
  // runtime's event sources on for a session with `rules` (the EventRecorder is already active)
  // or returns why it cannot (the message names the option), leaving nothing on; events_stop
  // turns them off. Without events_start (a native program) sessions refuse alloc= and lock=.
  std::function<Status(const EventRules& rules)> events_start;
  std::function<void()> events_stop;
  // The live option: tells whether a sampled object is still alive (live_objects.h). Without
  // it sessions refuse live.
  std::function<std::unique_ptr<ObjectTracker>()> object_tracker;
};

// What a session did, for callers and tests.
struct SessionStats {
  bool running = false;
  std::string cpu_engine;  // the CPU engine that really ran ("" when none)
  bool wall = false;
  std::string clock;            // "tsc" or "monotonic"
  uint64_t consumed = 0;        // samples drained from the buffer
  uint64_t dropped = 0;         // samples dropped because the buffer was full
  uint64_t peak_drain = 0;      // the most samples one drain found waiting (of buffer= slots)
  uint64_t failed_threads = 0;  // threads an engine could not arm (not counting exited ones)
  uint64_t threads_seen = 0;    // distinct tids armed during the session
  uint64_t wall_signals = 0;
  uint64_t wall_intervals = 0;        // wall time accounted for, in intervals (signals and repeats)
  uint64_t wall_throttled_ticks = 0;  // wall ticks that signalled fewer threads (backpressure)
  uint64_t wall_skipped_ticks = 0;    // wall ticks the sampler woke too late for (a loaded CPU)
  std::string recording;              // the JFR file or repository ("" when samples stay in memory)
  uint64_t recorded_samples = 0;
  std::string recording_error;  // the recording's first I/O failure, if any
  // The background thread printed recording_error when it happened (report.h); a failure in
  // the final drain at Stop() is not, and is left to the caller of Stop().
  bool recording_error_reported = false;
};

class Session {
 public:
  static constexpr std::chrono::milliseconds kDrainInterval{20};

  // Starts sampling (and recording, with file= or repository=) as `options` say. On failure
  // nothing of the session is left running and the Status says what failed: kInvalidArgument
  // (attributes=; alloc=, lock= or live without a runtime that reports events), kUnavailable
  // (the context store, signals, memory, every CPU engine refused, a thread, the runtime's event
  // sources), kIo (the recording's file or folder; the message names the option and the path).
  // On success *notes holds what the caller should print once (a CPU engine fallback, a clock
  // fallback) or is empty.
  static StatusOr<std::unique_ptr<Session>> Start(const Options& options, const RuntimeHooks& hooks,
                                                  std::string* notes);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Stops sampling and finishes the recording (see above). kIo naming the recording when it
  // failed at some point (its first failure); sampling stopped either way. Call once.
  Status Stop();

  // For a dump of the recording (recording_dump.h): on the background thread, between two
  // ticks, drains the buffer, publishes everything consumed so far and opens the published
  // files into *files. kWrongState when the session has no recording or it failed before; kIo
  // when publishing or opening failed. Never blocks the signal handler; the background thread
  // is busy only for the drain and the publication.
  Status PublishRecording(PublishedFiles* files);

  SessionStats Stats() const;
  // The samples aggregated in memory; stays valid (shared) after the session is gone.
  std::shared_ptr<Aggregator> aggregator() const { return aggregator_; }

  // A runtime's thread hooks (JVMTI ThreadStart/ThreadEnd): arm or disarm `tid` now.
  void OnThreadStart(pid_t tid) { registry_->OnThreadStart(tid); }
  void OnThreadEnd(pid_t tid) { registry_->OnThreadEnd(tid); }

 private:
  class HandlerActivation;
  class EventSources;
  class BackgroundThread;

  Session(const Options& options, const RuntimeHooks& hooks);
  // The background thread's periodic work.
  void Tick();
  // Moves buffered samples into the recording (which hands them to the aggregator as it writes
  // them), or into the aggregator when there is no recording.
  void DrainSamples();
  // DrainSamples, unless the recording is a buffer's worth behind (see Draining). The background
  // thread's drains; Stop and PublishRecording drain unconditionally, then write everything.
  void DrainUnlessBehind();
  // Prints the recording's first write error once, when it happens: a long-running process
  // learns it then, not only at Stop(). Sampling goes on.
  void ReportRecordingFailure();
  const std::string& recording_path() const;

  const Options options_;
  const RuntimeHooks hooks_;  // a copy: the background thread reads it unlocked
  // Wakes the background thread: rung by the buffer's producers at its high-water mark and by
  // the controller (a task, the end). Declared before the buffer, which rings it.
  Doorbell doorbell_;
  // Acquired in this order, released in reverse (see above).
  std::unique_ptr<Clock> clock_;
  std::unique_ptr<SampleBuffer> buffer_;
  WallRepeats wall_repeats_;  // background thread only
  std::shared_ptr<Aggregator> aggregator_;
  std::unique_ptr<WallWitnessTable> wall_witnesses_;  // null without wall=; handlers write it
  // Held for the session when the CPU engine records kernel frames into a recording, so its
  // symbolizer finds the table loaded (session.cc); null otherwise.
  std::shared_ptr<const KernelSymbols> kernel_symbols_;
  std::unique_ptr<HandlerActivation> activation_;
  std::unique_ptr<SamplingEngine> cpu_engine_;  // null without a CPU engine
  std::unique_ptr<WallEngine> wall_engine_;     // null without wall=
  std::unique_ptr<Recording> recording_;        // null without file= or repository=
  std::unique_ptr<EventSources> events_;        // null without alloc= and lock=
  std::unique_ptr<ThreadRegistry> registry_;
  std::unique_ptr<BackgroundThread> background_;

  bool stopped_ = false;
  // Set by the background thread once it printed the recording's error; read by Stats().
  std::atomic<bool> recording_error_reported_{false};
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SESSION_SESSION_H_
