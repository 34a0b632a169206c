// JfrSync: jfrsync=CONFIG in a JVM (profiler/session/jdk_recorder.h): a jdk.jfr.Recording with
// that configuration, started beside the session through JNI and written, when it stops, after
// the session's own chunks in the one recording file.
//
// CONFIG as async-profiler reads it: "+a+b" is a recording with only the events a and b enabled
// (their default settings); anything else is a predefined configuration's name
// (Configuration.getConfiguration: "default", "profile") or, when there is none by that name, a
// .jfc file (Configuration.create). The JDK's events of the kinds the session records itself
// are disabled in a configuration (the request says which); "+" lists are taken as they are.
//
// The recording goes to disk and has a destination next to the session's file (FILE.jdk.jfr):
// the JDK writes it there when the recording stops, whether StopInto stops it or the JVM's
// shutdown did first (JFR's shutdown hook stops every recording before the agent's VMDeath).
// StopInto then copies the session's chunks and the JDK's into FILE.tmp (jfr_copy.h) and
// renames it over FILE, so FILE is whole at every moment; the destination is removed. A dump
// (SnapshotInto) does the same with what Recording.dump writes of the running recording.
//
// select=if-context: the recording's duration thresholds are set to 0 (the JDK records every
// duration event) and remembered; when the JDK's chunks are added, those of its events below
// their threshold that fall in no span (JfrReader::ContextAt over the joined file) are left out
// (CopyChunks' drop list), so a request's every event is kept and elsewhere only slow ones.
// contexts=triggered works the same way: the session writes every span, and the spans in which
// no event stays (ctxprof's or the JDK's) are left out when the JDK's chunks join the file, so a
// request whose only event was a jdk.FileRead keeps its span. The whole file is read into
// memory for either (JfrReader), once per stop or dump.
//
// Time base: the JDK's ticks. Without -XX:+UseFastUnorderedTimeStamps HotSpot's JFR counts
// nanoseconds of the same CLOCK_MONOTONIC since the JVM's start; the origin is read as the
// midpoint of the tightest of a few clock reads around jdk.jfr.internal.JVM.counterTime()
// (JNI ignores module encapsulation). A TSC-counting JFR is refused (kUnavailable).
//
// Thread keys: JDK 25's printer joins a contextual event to others by the thread pool's key, so
// the session keys Java threads as the JDK's recorder does (JdkThreadKey: its own id on JDK 17,
// the java.lang.Thread id since JDK 19). The lookup (JNI references to jdk.jfr.internal.JVM) is
// published by Start before the session starts and withdrawn by the destructor after it
// stopped, when its writer thread, the one caller, has been joined.
//
// Thread safety: StopInto and SnapshotInto are serialised by a mutex (a dump may run beside the
// stop); Profiler calls Start and StopInto without its lock. Each call attaches the calling
// thread to the VM for its duration if it is not attached.
#ifndef CTXPROF_JNI_JFR_SYNC_H_
#define CTXPROF_JNI_JFR_SYNC_H_

#include <jni.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "profiler/base/status.h"
#include "profiler/jfr/jfr_append.h"
#include "profiler/session/jdk_recorder.h"

namespace ctxprof {

class JfrSync : public JdkRecorder {
 public:
  // Starts the JDK's recording for a session writing request.file. kUnavailable saying why: no
  // jdk.jfr module, an unknown configuration or event, the recorder refused (its exception).
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
  Status StopInto(const std::string& path) override;
  Status SnapshotInto(const std::string& path) override;

 private:
  JfrSync(JavaVM* vm, jobject recording, std::string destination, uint64_t origin_nanos,
          AppendSelection selection)
      : vm_(vm),
        recording_(recording),
        destination_(std::move(destination)),
        origin_nanos_(origin_nanos),
        selection_(std::move(selection)) {}

  JavaVM* const vm_;
  std::mutex mutex_;   // a dump and the stop may come from two threads
  jobject recording_;  // a global reference; null once closed; guarded by mutex_
  const std::string destination_;
  const uint64_t origin_nanos_;
  // select=if-context's thresholds and contexts=triggered, applied when the files join.
  const AppendSelection selection_;
};

}  // namespace ctxprof

#endif  // CTXPROF_JNI_JFR_SYNC_H_
