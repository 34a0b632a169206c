// JfrSync: jfrsync=CONFIG in a JVM (profiler/session/jdk_recorder.h): a jdk.jfr.Recording with
// that configuration, started beside the session through JNI, whose events join the session's
// recording: after its chunks in file=, in each chunk file of repository= for its period.
//
// CONFIG as async-profiler reads it: "+a+b" enables only the events a and b (their defaults);
// else a predefined configuration ("default", "profile"), else a .jfc file. With a
// configuration, the JDK's events of the kinds the session records itself are disabled.
//
// file=: the recording goes to disk with a destination beside the file (FILE.jdk.jfr), where
// the JDK writes it when it stops, whether StopInto stops it or the JVM's shutdown did first.
// StopInto then rewrites FILE as the session's chunks and the JDK's (AppendRecording, through
// FILE.tmp and a rename, so FILE is whole at every moment). SnapshotInto does the same for a
// dump with Recording.dump. repository=: asked for a period boundary, a thread of its own
// dumps the recording (Recording.dump rotates the JDK's chunk once) and copies the chunks that
// began after the last ones copied to REPOSITORY/.ctxprof-jfrsync.period; the boundary is the
// end of the last of them. EndPeriodInto appends that copy to the session's chunk file that ends
// there (the last one also the rest, the recording stopped into .ctxprof-jfrsync.jdk.jfr).
//
// select=if-context: the duration thresholds are set to 0 and remembered; an event below its
// threshold in no span is left out when the files join; contexts=triggered: the spans in which
// no event stays are left out then (jfr_append.h, per chunk file with repository=).
//
// Time base: JDK's ticks, CLOCK_MONOTONIC nanoseconds since an origin read around
// jdk.jfr.internal.JVM.counterTime() (JNI ignores module encapsulation); a JFR counting TSC
// ticks (-XX:+UseFastUnorderedTimeStamps) is refused. Thread keys: JDK 25's printer joins by
// the thread pool's key, so Java threads take the JDK's (JdkThreadKey, virtual threads their
// id: thread_pool.h; JNI references published by Start with a release store, withdrawn by the
// destructor once the session's writer, the one caller, has ended).
//
// Thread safety: every method but Start holds a mutex (a dump may run beside the stop; periods
// are asked for by the session's writer and rotated by the worker); each attaches the calling
// thread to the VM for its duration if it is not attached.
#ifndef CTXPROF_JNI_JFR_SYNC_H_
#define CTXPROF_JNI_JFR_SYNC_H_

#include <jni.h>

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "profiler/base/status.h"
#include "profiler/jfr/jfr_append.h"
#include "profiler/session/jdk_recorder.h"

namespace ctxprof {

// A chunk of the JDK's recording: its start and end in epoch nanoseconds and its end in the
// JDK's ticks (start ticks plus duration, nanoseconds as ReadOrigin checked).
struct JdkChunkMark {
  int64_t start_nanos = INT64_MIN;
  int64_t end_nanos = 0;
  uint64_t end_ticks = 0;
};

class JfrSync : public JdkRecorder {
 public:
  // Starts the JDK's recording for a session writing request.file or request.repository (and
  // with it the period thread). kUnavailable saying why: no jdk.jfr module, an unknown
  // configuration or event, the recorder refused (its exception), no thread.
  static StatusOr<std::unique_ptr<JdkRecorder>> Start(JavaVM* vm,
                                                      const JdkRecorderRequest& request);
  // True from a successful Start to the recorder's end: the JFR thread resolver then asks
  // JdkThreadKey for each Java thread (ResolvedThread::jdk_key). Any thread may ask.
  static bool Running();
  // The JDK recorder's key of `thread` (jdk.jfr.internal.JVM.getThreadId), 0 when unknown.
  // Only while Running(), from a thread attached to the VM (the session's writer).
  static uint32_t JdkThreadKey(JNIEnv* env, jobject thread);
  ~JfrSync() override;
  uint64_t monotonic_origin_nanos() const override { return origin_nanos_; }
  bool per_chunk() const override { return per_chunk_; }
  Status StopInto(const std::string& path) override;
  Status SnapshotInto(const std::string& path) override;
  void RequestPeriodBoundary() override;
  uint64_t PeriodBoundary() override;
  pid_t worker_tid() const override { return worker_tid_; }
  void EndPeriodInto(const std::string& path, bool last) override;

 private:
  JfrSync(JavaVM* vm, jobject recording, bool per_chunk, std::string destination,
          std::string period_file, uint64_t origin_nanos, AppendSelection selection)
      : vm_(vm),
        recording_(recording),
        per_chunk_(per_chunk),
        destination_(std::move(destination)),
        period_file_(std::move(period_file)),
        origin_nanos_(origin_nanos),
        selection_(std::move(selection)) {}
  // Stops recording_ (unless the JVM's shutdown did) and waits until its destination is written.
  void StopRecording(JNIEnv* env);
  void CloseRecording(JNIEnv* env);  // and forgets it
  void KeepPeriodError(const Status& status);
  // repository=: the worker thread: RotatePeriod whenever asked, until the destructor.
  void RunPeriods();
  // Dumps the recording (one JDK rotation) and copies its chunks after the last ones copied
  // (the header); returns the boundary, 0 when it failed, UINT64_MAX once the JVM's shutdown
  // stopped the recording.
  uint64_t RotatePeriod();

  JavaVM* const vm_;
  std::mutex mutex_;      // guards the members below that change
  jobject recording_;     // a global reference; null once closed
  const bool per_chunk_;  // repository=
  const std::string destination_;
  const std::string period_file_;  // repository=: the JDK's chunks of the period that ended
  bool period_pending_ = false;    // period_file_ holds them
  JdkChunkMark copied_;            // repository=: the last of the JDK's chunks copied
  Status period_error_;            // repository=: the first period that failed
  const uint64_t origin_nanos_;
  std::thread worker_;         // repository=: RunPeriods
  std::mutex boundary_mutex_;  // guards the five below
  std::condition_variable boundary_asked_;
  pid_t worker_tid_ = 0;  // set by the worker as it starts; Create waits for it
  bool boundary_requested_ = false;
  bool stopping_ = false;
  uint64_t boundary_ = 0;  // PeriodBoundary()
  // select=if-context's thresholds and contexts=triggered, applied when the files join.
  const AppendSelection selection_;
};

}  // namespace ctxprof

#endif  // CTXPROF_JNI_JFR_SYNC_H_
