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
// Each is a member that releases itself in its destructor, declared in that order, so a failure
// at any step returns its Status and the destructors undo the steps before it (records in the
// buffer, and the object references of live allocation records, are dropped with it).
//
// Stop() is the orderly end of a started session: the background thread joined (8), threads
// disarmed (7), engines stopped (4, 3), handler deactivated (2), event sources off (6), so no
// sample or event can still arrive; then the last records are drained into the recording (or the
// aggregator without one) and the recording is closed (5). Unlike destruction, the recording
// outlives the engines and event sources so that it gets their last records. After Stop() the
// stats and aggregator stay readable.
//
// The background thread ("ctxprof-writer") drains the buffer, rescans threads and ticks the
// recording (symbolize, encode, flush, rotate), in that order, every kDrainInterval and when the
// doorbell rings (high-water mark, sample_buffer.h; a task; stop). Under load it gets only a fair
// share of a CPU, so the cheap work that keeps samples and threads comes first and nothing slow
// runs on it (see Start). Draining: with a recording a drain only copies records into its
// reorderer (sample_reorderer.h), again after the rescan and every
// Recording::kRecordsBetweenDrains records written; no drain starts while the recording holds
// buffer= unwritten records (DrainUnlessBehind), so it holds fewer than two buffers' worth. Its
// first write error is printed when it happens (notice.h). Measurements: docs/SAMPLER.md, "Drops".
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
#include "profiler/session/jdk_recorder.h"
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
  // jfrsync=: starts the JDK's own recorder (jdk_recorder.h) or says why it cannot. Called
  // without the profiler's lock held: the JDK starts threads, which the thread hooks report.
  std::function<StatusOr<std::unique_ptr<JdkRecorder>>(const JdkRecorderRequest&)> jdk_recorder;
  // The runtime calls OnThreadStart/OnThreadEnd for every thread it runs (JVMTI ThreadStart and
  // ThreadEnd): the other threads, its own helpers, are looked for less often (thread_registry.h).
  bool reports_threads = false;
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
  // The background thread printed recording_error when it happened (notice.h); a failure in
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
  // `jdk_recorder` (jfrsync= with repository=; may be null, must outlive the session) gets the
  // chunk files' periods (RecordingInputs::jdk_recorder).
  static StatusOr<std::unique_ptr<Session>> Start(const Options& options, const RuntimeHooks& hooks,
                                                  std::string* notes,
                                                  JdkRecorder* jdk_recorder = nullptr);
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
  uint64_t last_forget_ = 0;  // when Tick last had wall_repeats_ forget threads
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
