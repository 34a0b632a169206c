// Options: the one parser for "key=value,key=value" profiler option strings.
//
// The C API (ctxprof_start), the JVM agent (-agentpath:...=options) and the Java API all pass
// the same string here. Parsing is all-or-nothing: on the first bad key or value ParseOptions
// returns kInvalidArgument whose message names the key, the value and how to fix it.
//
// Keys (durations take a unit: ns, us, ms or s; sizes take an optional k, m or g suffix):
//   event=cpu|ctimer|itimer|wall|alloc|lock, or several joined by '+' (cpu+wall, cpu+alloc+lock;
//                      at most one CPU engine). CPU engine: cpu = perf_events cpu-clock, falling
//                      back to ctimer, itimer. alloc and lock turn on the runtime events below
//                      with their default interval/threshold; naming only them (event=alloc)
//                      samples no CPU or wall time.
//   interval=10ms      CPU sampling interval (for event=wall alone: the wall interval).
//                      [100us, 1h].
//   wall=50ms          enables wall sampling at this interval, [1ms, 1h].
//   filter=context     wall samples only threads whose context block is non-empty.
//   threads=16         wall: at most this many threads signalled per tick, [1, 4096].
//   depth=128          native frames per sample, [1, kMaxStackDepth].
//   unwind=dwarf|libunwind|fp  native stack walking: dwarf (default) = our unwind tables compiled
//                      from each library's .eh_frame (exact without frame pointers, ~15 ns a
//                      frame; profiler/sampler/cfi_registry.h); libunwind = libunwind 1.6 on the
//                      same CFI (~1-2 us a frame: for comparison and as an escape hatch); fp =
//                      the frame-pointer chain (needs -fno-omit-frame-pointer code).
//   cstack=dwarf       in a JVM (the agent installed a Java stack walker), how native and Java
//                      frames combine (async-profiler's names): dwarf (default) / fp = the
//                      mixed stack: native frames from the interrupted pc up to the JVM's code
//                      (a Java native method's callees, VM code, a thread without Java frames
//                      whole), then the Java frames; dwarf also sets unwind=dwarf, fp sets
//                      unwind=fp. no = Java frames only (a thread with no walkable Java stack
//                      gets an empty stack); native = Java frames, or the native stack when the
//                      thread has no walkable Java frames (the view before the mixed stack).
//                      java+native = the mixed stack with the unwind= walker (older spelling).
//                      Outside a JVM every mode walks natively.
//   kernel=true|false  kernel frames in CPU samples: with event=cpu (perf_events) and the
//                      permission for kernel-mode sampling (perf_event_paranoid <= 1, or
//                      CAP_PERFMON / CAP_SYS_ADMIN) and readable /proc/kallsyms addresses, each
//                      sample interrupted in the kernel starts with the kernel stack from the
//                      perf ring buffer (profiler/sampler/perf_callchain.h); otherwise the start
//                      notes say why there are none. false: no ring buffers, no kernel frames.
//                      In a JVM, cstack=no (Java frames only) has no kernel frames either.
//   clock=tsc|monotonic
//   signal=SIGPROF     the CPU engines' signal: a number or a name (PROF, SIGPROF, SIGRTMIN+n...).
//   wallsignal=SIGVTALRM  the wall engine's signal. It must differ from signal= when both run:
//                      a standard signal does not queue, so a pending wall signal would swallow
//                      a perf overflow's signal and the one-shot event would never be re-armed.
//   buffer=2048        sample buffer slots, [16, 65536]; ~2.1 KiB each at depth=128.
//   file=path          write a JFR recording to this file, one whole chunk per flush, so
//                      that every reader reads it while it grows; without file= or
//                      repository= samples stay in memory.
//   repository=dir     continuous mode: one JFR file per chunk in this folder (created 0700),
//                      oldest deleted first under maxsize=/maxage=. Exclusive with file=.
//   attributes=a;b     context attribute names, semicolon-separated, bound to slots 0, 1, ...
//   Runtime events (a JVM only: the agent reports them, jni/jvm_events.h; they are written to the
//   JFR recording, so file= or repository= is required):
//   alloc=512k         allocation sampling, about one sample per SIZE bytes a thread allocates,
//                      [1, 1g]; jdk.ObjectAllocationSample with weight = bytes it stands for.
//   live               (no value) also write profiler.LiveObject for the sampled objects still
//                      reachable when the session stops. Needs alloc.
//   lock=10ms          contended monitor enters (jdk.JavaMonitorEnter) and LockSupport.park
//                      waits (jdk.ThreadPark) that lasted at least this long, [0ns, 1h].
//   select=all|if-context  all (default): events by the rules above; if-context: on a thread
//                      whose context is set, every lock wait whatever its duration and
//                      allocations sampled 16x finer (profiler/sampler/event_recorder.h);
//                      outside a context the rules above. Needs alloc or lock.
//   JFR writer keys, validated here and consumed by the writer:
//   chunksize=, maxsize= (bytes), chunktime=, maxage=, flush= (durations),
//   cpusamples=jdk|ctxprof: CPU samples as jdk.ExecutionSample (every JFR tool reads them) or
//                      as ctxprof.CpuSample (has eventThread: JDK 25 prints Context lines).
//   wallsamples=profiler|jdk: wall samples as profiler.WallClockSample (async-profiler's
//                      converter, Pyroscope, JDK 25 Context lines) or as jdk.NativeMethodSample
//                      (jfrview and speedscope read only the JDK's sample events).
//   contextid=false|true: every sample and allocation/lock event ends with a contextId
//                      (Pyroscope reads it; async-profiler's converter cannot read such events).
//                      docs/JFR.md.
//   Upload of each finished chunk to a Pyroscope server (repository= required; docs/SAMPLER.md):
//   upload=URL         http://host[:port][/prefix] or https://...; POSTs to <prefix>/ingest.
//                      Implies contextid=true; needs CPU and wall intervals that are equal and
//                      divide 1s (Pyroscope takes one sampleRate in Hz). Defaults chunktime=10s,
//                      chunksize=3m (Pyroscope's default limit is 4 MiB per profile).
//   uploadname=app     the application name (Pyroscope `name`; default "ctxprof").
//   uploadlabels=k=v;k2=v2  static series labels, semicolon-separated.
//   uploadtoken=, uploadbasic=, uploadtenant=  env:VARIABLE or file:PATH holding a bearer token,
//                      "user:password" for basic auth, the X-Scope-OrgID tenant. Only the
//                      reference is an option, so the secret is never in option strings, logs or
//                      the recording; it is read when the session starts.
//   uploadca=PATH      PEM CA certificates to verify an https server with (default: the system's).
//
// Thread safety: ParseOptions is a pure function; safe from any thread (not from a signal).
#ifndef CTXPROF_PROFILER_OPTIONS_H_
#define CTXPROF_PROFILER_OPTIONS_H_

#include <csignal>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "profiler/base/status.h"
#include "profiler/sampler/clock.h"
#include "profiler/sampler/stack_depth.h"

namespace ctxprof {

// Which engine samples CPU time. kPerf falls back to kCpuTimer, then kITimer, when refused.
enum class CpuEngineKind : uint8_t { kNone, kPerf, kCpuTimer, kITimer };
enum class UnwindKind : uint8_t { kDwarf, kLibunwind, kFramePointer };
enum class CStackKind : uint8_t { kNo, kNative, kMixed };
// select=: which runtime events are kept (event_recorder.h).
enum class EventSelect : uint8_t { kAll, kIfContext };

// Settings of the JFR writer (profiler/jfr/). 0 means "writer default".
struct JfrOptions {
  uint64_t chunk_size_bytes = 0;
  uint64_t chunk_time_ns = 0;
  uint64_t max_size_bytes = 0;
  uint64_t max_age_ns = 0;
  uint64_t flush_interval_ns = 0;
  bool cpu_samples_as_ctxprof = false;  // cpusamples=ctxprof
  bool wall_samples_as_jdk = false;     // wallsamples=jdk
  bool context_id = false;              // contextid=true
  bool context_id_given = false;        // contextid= was present
};

// Where a secret comes from: an environment variable or a file (its text, one trailing newline
// removed). Parsing stores only the reference.
struct SecretSource {
  enum Kind : uint8_t { kNone, kEnvironment, kFile };
  Kind kind = kNone;
  std::string reference;  // the variable's name or the file's path
};

struct UploadOptions {
  std::string url;  // as given; empty = no upload
  bool https = false;
  std::string host;
  uint16_t port = 0;
  std::string path_prefix;  // "" or "/prefix" (no trailing '/')
  std::string name = "ctxprof";
  std::vector<std::pair<std::string, std::string>> labels;
  SecretSource token;
  SecretSource basic;
  SecretSource tenant;
  std::string ca_file;
};

struct Options {
  static constexpr uint64_t kMinCpuIntervalNs = 100 * kNanosPerMicro;
  static constexpr uint64_t kMinWallIntervalNs = kNanosPerMilli;
  static constexpr uint64_t kMaxIntervalNs = 3600 * kNanosPerSecond;
  static constexpr uint32_t kMinBufferSlots = 16;
  static constexpr uint32_t kMaxBufferSlots = 65536;
  static constexpr int kMaxWallThreadsPerTick = 4096;
  static constexpr uint64_t kDefaultAllocIntervalBytes = 512 * 1024;
  static constexpr uint64_t kMaxAllocIntervalBytes = 1ull << 30;
  static constexpr uint64_t kDefaultLockThresholdNs = 10 * kNanosPerMilli;

  CpuEngineKind cpu_engine = CpuEngineKind::kPerf;
  uint64_t cpu_interval_ns = 10 * kNanosPerMilli;
  bool wall_enabled = false;
  uint64_t wall_interval_ns = 50 * kNanosPerMilli;
  bool filter_context = false;
  int wall_threads_per_tick = 16;
  int depth = kDefaultStackDepth;
  UnwindKind unwind = UnwindKind::kDwarf;
  CStackKind cstack = CStackKind::kMixed;
  bool kernel_frames = true;  // kernel=
  ClockKind clock = ClockKind::kTsc;
  int signal = SIGPROF;
  int wall_signal = SIGVTALRM;
  uint32_t buffer_slots = 2048;
  std::string file;
  std::string repository;
  bool attributes_given = false;  // attributes= was present (possibly to clear them)
  std::vector<std::string> attributes;
  // Runtime events.
  uint64_t alloc_interval_bytes = 0;  // 0 = no allocation sampling
  bool live = false;
  bool lock_enabled = false;
  uint64_t lock_threshold_ns = kDefaultLockThresholdNs;
  EventSelect select = EventSelect::kAll;
  JfrOptions jfr;
  UploadOptions upload;
};

StatusOr<Options> ParseOptions(std::string_view text);

// Pieces of the parser, exposed for tests and for callers with single values. Each returns
// false and leaves its output untouched when the text is not a valid value.
// "10ms" -> 10,000,000. A unit is required.
bool ParseDuration(std::string_view text, uint64_t* nanos);
// "64m" -> 67,108,864. Suffix k, m or g (powers of 1024, either case), or none for bytes.
bool ParseBytes(std::string_view text, uint64_t* bytes);
// "SIGPROF", "PROF", "27", "SIGRTMIN+3" -> the signal number.
bool ParseSignal(std::string_view text, int* signal);

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_OPTIONS_H_
