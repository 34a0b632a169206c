// Resolvers: how the JFR writer turns raw sample data into names.
//
// The writer knows neither the JVM nor ELF files. The JVM layer (JVMTI) and the native
// symbolizer implement these interfaces; tests implement them with fixed tables.
//
// Thread safety: the writer calls resolvers only from its own (single) thread, so
// implementations need no locking against the writer. They are off the hot path: a frame is
// resolved once per distinct (id, bci, kind) per recording, a thread once per chunk.
#ifndef CTXPROF_PROFILER_JFR_EVENTS_FRAME_RESOLVER_H_
#define CTXPROF_PROFILER_JFR_EVENTS_FRAME_RESOLVER_H_

#include <cstdint>
#include <string>

#include "profiler/jfr/jfr_metadata.h"
#include "profiler/sampler/sample.h"

namespace ctxprof {

// A frame as JFR shows it. Java class names are in the JVM's internal form ("java/lang/String",
// as HotSpot writes them; readers show dots); the writer makes the part before the last '/' the
// class's package. Native frames conventionally use the library name as class name
// ("libc.so.6", no package) and "()L;" as descriptor, or a C++ symbol's parameters as
// descriptor (profiler/jfr/native_method.h); a descriptor must contain "(" and ")" or
// `jfr print` fails.
struct ResolvedFrame {
  std::string class_name;
  std::string method_name;
  std::string descriptor;
  int32_t line_number = -1;  // -1 = unknown
  JfrFrameType type = JfrFrameType::kNative;
};

class FrameResolver {
 public:
  virtual ~FrameResolver() = default;
  // Fills `out` for `frame`. Must always produce a usable frame: an unknown pc becomes e.g.
  // class "[unknown]", method "0x7f12...". `out` arrives reset to defaults.
  virtual void Resolve(const RawFrame& frame, ResolvedFrame* out) = 0;
  // Reads now what resolving the objects loaded now will need (symbol tables), on the thread
  // that opens the recording: the background thread that resolves later may get a small share
  // of a CPU under load, and a slow first Resolve there stalls its draining (session.h).
  virtual void Preload() {}
};

struct ResolvedThread {
  std::string name;            // OS thread name, or the Java name for Java threads
  int64_t java_thread_id = 0;  // 0 = not a Java thread
  // The JDK's own JFR key for the thread when its recorder runs beside ours (jfrsync=) and
  // keys threads by a known rule (JDK 19+: the java.lang.Thread id); 0 = none.
  uint32_t jdk_key = 0;
};

class ThreadResolver {
 public:
  virtual ~ThreadResolver() = default;
  // Fills `out` for kernel thread id `tid`. `out` arrives reset to defaults.
  virtual void Resolve(int32_t tid, ResolvedThread* out) = 0;
  // The name of the virtual thread whose java.lang.Thread id is `id` ("" when it has none or
  // it is not known, as for most virtual threads).
  virtual std::string VirtualThreadName(uint64_t /*id*/) { return ""; }
  // True when the JDK's own recorder runs beside ours (jfrsync=) and so keys a virtual thread
  // by its java.lang.Thread id (JDK 19+: every thread), which JDK 25's printer joins by.
  virtual bool JdkKeysVirtualThreadsById() { return false; }
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_JFR_EVENTS_FRAME_RESOLVER_H_
