// Profiler: one profiling session at a time in a process: start, stop, dump; plus the context
// setters behind the C API.
//
// A session owns: the clock, the sample buffer, the engines (one CPU engine after fallback,
// and/or wall), the thread registry and a background thread that drains the buffer into the
// session's SampleSink (the Aggregator) and checks for new threads every kDrainInterval. Each
// wake-up costs ~25 us of CPU on this VM, so the interval is a trade-off between idle overhead
// (~1.3 ms of CPU per second at 20 ms) and buffer size: the default 2048 slots hold 100k
// samples/s at 20 ms, and ride out a drain thread that the scheduler or a JVM safepoint holds
// back for a while (docs/RELIABILITY.md). The Aggregator of the last session stays readable after
// Stop() (Dump, Stacks) until the next Start(). The first write error of the session's
// recording is printed by the background thread when it happens (one "ctxprof:" line on
// stderr, report.h); sampling and aggregation go on.
//
// Thread safety: Start/Stop/Dump/RegisterAttributes/session queries are serialised by one mutex
// and may be called from any thread (never from a signal handler). The context setters take no
// lock: each writes only the calling thread's block (the seqlock's single writer).
#ifndef CTXPROF_PROFILER_PROFILER_H_
#define CTXPROF_PROFILER_PROFILER_H_

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "context/context_map.h"
#include "context/dictionary.h"
#include "profiler/options.h"
#include "profiler/recording/aggregator.h"
#include "profiler/recording/frame_resolver.h"
#include "profiler/recording/live_objects.h"
#include "profiler/sampler/clock.h"
#include "profiler/sampler/engine.h"
#include "profiler/sampler/event_recorder.h"
#include "profiler/sampler/sample_buffer.h"
#include "profiler/sampler/signal_handler.h"
#include "profiler/sampler/thread_registry.h"

namespace ctxprof {

// What the last (or current) session did, for callers and tests.
struct SessionStats {
  bool running = false;
  std::string cpu_engine;  // the CPU engine that really ran ("" when none)
  bool wall = false;
  std::string clock;            // "tsc" or "monotonic"
  uint64_t consumed = 0;        // samples drained from the buffer
  uint64_t dropped = 0;         // samples dropped because the buffer was full
  uint64_t failed_threads = 0;  // threads an engine could not arm (not counting exited ones)
  uint64_t threads_seen = 0;    // distinct tids armed during the session
  uint64_t wall_signals = 0;
  std::string recording;  // the JFR file or repository ("" when samples stay in memory)
  uint64_t recorded_samples = 0;
  std::string recording_error;  // the recording's first I/O failure, if any
  // The background thread printed recording_error when it happened (report.h); a failure in
  // the final drain at Stop() is not, and is left to the caller of Stop().
  bool recording_error_reported = false;
};

// What a runtime (the JVM layer, jni/jvm_agent.h) plugs into sessions. Every member is optional;
// an empty RuntimeHooks is a native program.
struct RuntimeHooks {
  // Java frames in the signal handler (signal_handler.h); combined with native frames as the
  // session's cstack= option says.
  JavaStackWalk java_walk = nullptr;
  // Resolvers for a session's JFR recording, made on the thread that starts the session.
  std::function<std::unique_ptr<FrameResolver>()> frame_resolver;
  std::function<std::unique_ptr<ThreadResolver>()> thread_resolver;
  // Run on the session's background thread first thing and last thing (the JVM layer attaches
  // it to the VM so that the resolvers may call JVMTI, and detaches it).
  std::function<void()> background_start;
  std::function<void()> background_end;
  // Runtime events (alloc=, lock=; profiler/sampler/event_recorder.h): turn the runtime's event
  // sources on for a session with `rules` (the EventRecorder is already active), or off at its
  // end. events_start returns false with *error when it cannot; without it (native programs)
  // sessions refuse alloc= and lock=.
  std::function<bool(const EventRules& rules, std::string* error)> events_start;
  std::function<void()> events_stop;
  // The live option: tells whether a sampled object is still alive (live_objects.h).
  std::function<std::unique_ptr<ObjectTracker>()> object_tracker;
};

// Outcome of a control call; the C API maps these to its CTXPROF_E* codes.
enum class Status { kOk, kInvalidArgument, kWrongState, kIoError };

class Profiler {
 public:
  static constexpr std::chrono::milliseconds kDrainInterval{20};

  // The process-wide profiler (created on first use, never destroyed).
  static Profiler* Global();

  // Parses `options` and starts a session. On failure *message says why and nothing is left
  // running. On success *message holds notes for the caller to print once (e.g. an engine
  // fallback) or is empty.
  Status Start(const std::string& options, std::string* message);
  // Stops sampling and finishes the JFR recording, if any. kIoError (with *error naming the
  // file) when the recording failed at some point; sampling stopped either way. A failure the
  // background thread already printed is flagged in Stats().recording_error_reported, so that
  // a caller printing *error can print a short reference instead of the same line again.
  Status Stop(std::string* error);
  // Writes the current (or last) session's samples as collapsed stacks to `path`.
  Status Dump(const std::string& path, std::string* error);

  // The C API's registration: after it, names[i] is bound to slot i. The names are added to the
  // process-wide registry (context/process_context.h), whose slots never move, so `names` must
  // agree with what is already registered on their common prefix. New names are refused while
  // a session runs (the session records the names registered when it started).
  Status RegisterAttributes(const std::vector<std::string>& names, std::string* error);
  // Context setters for the calling thread (lock-free, allocation-free except when a value is
  // interned the first time).
  bool SetAttribute(int slot, const char* value, std::string* error);
  void SetTraceContext(uint64_t trace_high, uint64_t trace_low, uint64_t span_id);
  void ClearContext();

  // Installs the runtime's hooks for sessions started afterwards (a running session keeps the
  // hooks it started with).
  void SetRuntimeHooks(RuntimeHooks hooks);

  // JVM hooks (and for native code that knows its threads): arm/disarm a thread now.
  void OnThreadStart(pid_t tid);
  void OnThreadEnd(pid_t tid);

  // The process-wide dictionary of attribute values (ids in samples resolve through it);
  // nullptr only when the process context store could not be created.
  const Dictionary* dictionary() const;

  SessionStats Stats();
  // The aggregated samples of the current or last session (empty before the first Start).
  std::vector<AggregatedStack> Stacks();
  AggregatorCounters Counters();

 private:
  Profiler() = default;
  struct Session;

  bool StartLocked(const Options& options, std::string* message);
  void StopLocked();
  void BackgroundLoop(Session* session);
  // Prints the recording's first write error once, on the background thread, when it happens:
  // a long-running process learns it then, not only at Stop(). Sampling goes on.
  static void ReportRecordingFailure(Session* session);
  // Moves buffered samples into the aggregator and the recording. Called by the background
  // thread, or by Stop after it has been joined.
  static void DrainSamples(Session* session);
  // Fills *stats_ from the running session before it is torn down.
  void SnapshotStatsLocked();

  std::mutex control_mutex_;
  std::unique_ptr<Session> session_;       // guarded by control_mutex_
  std::shared_ptr<Aggregator> last_sink_;  // guarded by control_mutex_
  SessionStats last_stats_;                // guarded by control_mutex_
  RuntimeHooks hooks_;                     // guarded by control_mutex_
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_PROFILER_H_
