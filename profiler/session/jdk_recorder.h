// JdkRecorder: the JDK's own Flight Recorder run beside a session (jfrsync=CONFIG), as a runtime
// implements it (jni/jfr_sync.h); the session only starts it, takes its time base and, when it
// stops, appends the JDK's chunks to its own recording file, so that one file holds both. With
// repository= every chunk file gets the JDK's events of its own period instead: the session's
// writer asks for a period boundary at each rotation and hands over each finished chunk file.
//
// Time base: JDK 25's reader converts every chunk of a file with the first chunk's time base
// (docs/JFR.md, "jfrsync"), so a session synchronised with the JDK counts time in the JDK's own
// ticks: CLOCK_MONOTONIC nanoseconds minus the JVM's origin (MonotonicClock(origin)).
//
// Thread safety: every method may run beside another (a dump beside the stop, the periods
// from the session's writer thread).
#ifndef CTXPROF_PROFILER_SESSION_JDK_RECORDER_H_
#define CTXPROF_PROFILER_SESSION_JDK_RECORDER_H_

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "profiler/base/status.h"

namespace ctxprof {

// What the JDK's recording is started with.
struct JdkRecorderRequest {
  // A predefined configuration ("default", "profile"), a .jfc path, or "+name+name..." (only
  // the named events, with their defaults).
  std::string config;
  // The session's recording file (file=), which the JDK's chunks will end, or its repository
  // (repository=), whose chunk files each get the JDK's events of their period.
  std::string file;
  std::string repository;
  // The JDK's events of the kinds the session records itself are disabled (async-profiler's
  // rule): CPU and wall samples, allocation samples, monitor enters and parks.
  bool samples = false;
  bool allocations = false;
  bool locks = false;
  // select=if-context: the JDK's duration events are recorded whatever their duration, and
  // those shorter than their threshold (the configuration's, or threshold_nanos when given)
  // are left out of the file unless they fall inside a span.
  bool select_if_context = false;
  // contexts=triggered: the session writes every span; those in which no event of the joined
  // file falls (ctxprof's or the JDK's) are left out when the JDK's chunks are added.
  bool triggered_contexts = false;
  bool threshold_given = false;
  uint64_t threshold_nanos = 0;
};

class JdkRecorder {
 public:
  virtual ~JdkRecorder() = default;
  // The JDK's ticks are CLOCK_MONOTONIC nanoseconds minus this.
  virtual uint64_t monotonic_origin_nanos() const = 0;
  // True with repository=: each chunk file holds the JDK's events of its period.
  virtual bool per_chunk() const = 0;
  // Stops the JDK's recording (if the JVM's shutdown has not already) and writes `path` anew
  // as its own chunks followed by the JDK's. kUnavailable with the JDK's reason, or kIo naming
  // the file; `path` is left as it was on failure. With repository= (the last chunk had the
  // rest): only reports the first failure of a period, if any.
  virtual Status StopInto(const std::string& path) = 0;
  // repository=: asks for the JDK's recording to be rotated, in the background (it takes
  // milliseconds to seconds, which the session's writer thread must not wait for).
  virtual void RequestPeriodBoundary() = 0;
  // The last requested rotation: 0 while under way, then its boundary in the session's ticks,
  // UINT64_MAX - 1 when it failed (the chunk ends without the JDK's events), UINT64_MAX once
  // the JVM's shutdown has stopped the recording (the chunk in progress is the last).
  virtual uint64_t PeriodBoundary() = 0;
  // repository=: writes the finished chunk file `path` anew as its chunk followed by the JDK's
  // events up to the last boundary (`last`: all the JDK's recording holds; it is stopped). A
  // failure leaves `path` as it was and is kept for StopInto.
  virtual void EndPeriodInto(const std::string& path, bool last) = 0;
  // The thread the recorder runs for repository= (a thread of ours the session must not
  // sample), or 0 when it has none.
  virtual pid_t worker_tid() const = 0;
  // For a dump: appends what the JDK's recording holds so far (it goes on) to `path`, a dump of
  // the session's recording, the same way. Fails like StopInto; kWrongState after it.
  virtual Status SnapshotInto(const std::string& path) = 0;
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SESSION_JDK_RECORDER_H_
