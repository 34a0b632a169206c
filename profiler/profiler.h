// Profiler: the process-wide controller of profiling sessions (profiler/session/session.h):
// one session at a time, started, stopped and dumped by the front ends (the C API, the Java API,
// the JVM agent). It keeps what outlives a session: the last session's stats and its aggregated
// samples, readable after Stop() (Dump, Stacks) until the next Start(), and the runtime's hooks.
// It only samples and records; the calling thread's context is written through
// context/thread_context.h.
//
// Errors are Status values (profiler/base/status.h) whose messages are neutral to the front end:
// they name options, paths and commands, and each front end adds its own verb and form.
//
// Thread safety: every method is serialised by one mutex and may be called from any thread
// (never from a signal handler).
#ifndef CTXPROF_PROFILER_PROFILER_H_
#define CTXPROF_PROFILER_PROFILER_H_

#include <sys/types.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "profiler/base/status.h"
#include "profiler/session/aggregator.h"
#include "profiler/session/session.h"

namespace ctxprof {

// What `dump` writes.
enum class DumpFormat : uint8_t {
  kJfr,        // a JFR recording (profiler/session/recording_dump.h)
  kCollapsed,  // collapsed stacks, one line per aggregated stack (docs/SAMPLER.md)
};

// `name` "jfr" or "collapsed"; "" = by `path`'s extension: ".txt" and ".collapsed" are collapsed,
// anything else JFR. kInvalidArgument naming the value for any other name.
StatusOr<DumpFormat> ParseDumpFormat(const std::string& name, const std::string& path);

class Profiler {
 public:
  // The process-wide profiler (created on first use, never destroyed).
  static Profiler* Global();

  // Parses `options` and starts a session. On failure nothing is left running and the Status
  // says why: kInvalidArgument (an option), kWrongState (a session runs), kIo (the recording's
  // file or folder), kUnavailable (the system refused). On success *notes holds what the
  // caller should print once (e.g. an engine fallback) or is empty.
  Status Start(const std::string& options, std::string* notes);
  // Stops sampling and finishes the JFR recording, if any. kIo (naming the file) when the
  // recording failed at some point; sampling stopped either way. A failure the background
  // thread already printed is flagged in Stats().recording_error_reported, so that a front end
  // printing the error can print a short reference instead of the same line again.
  Status Stop();
  // Writes what the current (or last) session recorded so far to `path`, without stopping it.
  // JFR: the running session's recording when it has a working one (copied up to everything
  // consumed so far), else its aggregated samples (recording_dump.h). Collapsed: the aggregated
  // samples. kWrongState before any session, kIo naming the path when it cannot be written.
  Status Dump(const std::string& path, DumpFormat format);

  // Binds names[i] to attribute slot i. The names are added to the process-wide registry
  // (context/process_context.h), whose slots never move, so `names` must agree with what is
  // already registered on their common prefix. New names are refused while a session runs (the
  // session records the names registered when it started).
  Status RegisterAttributes(const std::vector<std::string>& names);
  // The Java API registers names in the process-wide registry at any time (a tracer creating a
  // ContextSetter while an agent's session runs), which cannot be refused without breaking the
  // application. The recording takes such names at its next chunk (JfrWriter), the aggregated
  // samples never. After such a registration this writes one line to stderr for each name the
  // running session did not start with, saying so and naming the fix.
  void ReportUnrecordedAttributes();

  // Installs the runtime's hooks for sessions started afterwards (a running session keeps the
  // hooks it started with).
  void SetRuntimeHooks(RuntimeHooks hooks);

  // JVM hooks (and for native code that knows its threads): arm/disarm a thread now.
  void OnThreadStart(pid_t tid);
  void OnThreadEnd(pid_t tid);

  SessionStats Stats();
  // The aggregated samples of the current or last session (empty before the first Start).
  std::vector<AggregatedStack> Stacks();
  AggregatorCounters Counters();

 private:
  Profiler() = default;
  std::shared_ptr<Aggregator> LastAggregator();

  std::mutex control_mutex_;
  std::unique_ptr<Session> session_;             // guarded by control_mutex_
  std::shared_ptr<Aggregator> last_aggregator_;  // guarded by control_mutex_
  SessionStats last_stats_;                      // guarded by control_mutex_
  RuntimeHooks hooks_;                           // guarded by control_mutex_
  // Registry slots ReportUnrecordedAttributes has reported; guarded by control_mutex_.
  size_t unrecorded_reported_ = 0;
  // jfrsync=: the JDK's recorder beside session_, started and stopped outside the lock.
  // Shared with a dump that copies outside the lock.
  std::shared_ptr<JdkRecorder> jdk_recorder_;  // guarded by control_mutex_
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_PROFILER_H_
