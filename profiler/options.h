// Options: the one parser for "key=value,key=value" profiler option strings.
//
// The C API (ctxprof_start), the JVM agent (-agentpath:...=options) and the Java API all pass
// the same string here. Parsing is all-or-nothing: on the first bad key or value ParseOptions
// returns kInvalidArgument whose message names the key, the value and how to fix it.
//
// Every key, its default and a one-line summary are in OptionTable(), which the parser consults
// first (a key missing there is unknown) and `ctxprof record --help` prints; docs/SAMPLER.md,
// "Options", says the same at length (keep it in step). Durations take a unit: ns, us, ms, s, m
// (minutes), h or d; sizes an optional k, m or g suffix (powers of 1024, either case). By group:
//   sampling   event= (cpu|ctimer|itimer|wall|alloc|lock joined by '+', at most one CPU engine;
//              cpu falls back to ctimer, then itimer), interval=, wall=, filter=context,
//              threads=, depth=, unwind=dwarf|libunwind|fp, cstack=dwarf|fp|no|native
//              (docs/JAVA.md; java+native is the older spelling of the mixed stack),
//              kernel=true|false, clock=tsc|monotonic, signal=, wallsignal= (must differ from
//              signal= when both run: a standard signal does not queue), buffer=
//   recording  file= (one whole chunk per flush) or repository= (a file per chunk, continuous
//              mode), attributes=a;b (context attribute names, bound to slots 0, 1, ...)
//   runtime    alloc=, live, lock=, select=all|if-context: a JVM only (jni/jvm_events.h),
//              written to the recording, so file= or repository= is required
//   JFR        chunksize=, maxsize=, chunktime=, maxage=, flush=, cpusamples=jdk|ctxprof,
//              wallsamples=profiler|jdk, contextid=: validated here, consumed by the writer
//              (docs/JFR.md)
//   jfrsync    jfrsync=CONFIG (a JVM only; file= or repository=; contexts=all unless
//   contexts=triggered
//              is given; a clock in the JDK's ticks: profiler/session/jdk_recorder.h); with
//              select=if-context the
//              JDK's short duration events only inside spans, jfrthreshold= their threshold
//   upload     upload=URL (repository= required; implies contextid=true, clock=monotonic and the
//              Pyroscope layout; CPU and wall intervals equal and dividing 1s), uploadname=,
//              uploadlabels=, uploadca=, and uploadtoken=, uploadbasic=, uploadtenant= as
//              env:VARIABLE or file:PATH: only the reference is an option, so a secret is never in
//              option strings, logs or the recording; it is read when the session starts.
//   otlp       otlp=URL (a collector's base URL; /v1development/profiles is added) or otlp=env
//              (the OTEL_EXPORTER_OTLP_* variables, read when the session starts: otlp_exporter.h);
//              repository= required; upload='s chunktime= and chunksize= defaults. Headers come
//              only from OTEL_EXPORTER_OTLP_HEADERS.
//   otel       otelcontext=true: thread contexts (OTEP 4947) and the process context (OTEP 4719)
//              published for OpenTelemetry readers until exit (context/otel_thread_record.h)
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
  uint64_t flush_interval_ns = kNanosPerSecond;  // flush=1s, as the writer's own default
  bool cpu_samples_as_ctxprof = false;           // cpusamples=ctxprof
  bool wall_samples_as_jdk = false;              // wallsamples=jdk
  bool context_id = false;                       // contextid=true
  bool context_id_given = false;                 // contextid= was present
  bool pyroscope = false;       // upload=: the layout Pyroscope's parser reads right
  bool all_contexts = false;    // contexts=all (default contexts=triggered; all with jfrsync=)
  bool contexts_given = false;  // contexts= was present
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

// otlp=: the URL as given ("env": from the environment when the session starts).
struct OtlpOptions {
  std::string url;  // empty = no OTLP export
};

// An http:// or https:// URL, split for HttpClient.
struct HttpUrl {
  bool https = false;
  std::string host;  // IPv6 without brackets
  uint16_t port = 0;
  std::string path;  // "" or "/path" (no trailing '/')
};

// What ParseHttpUrl's messages suggest: an example ("upload=http://pyroscope:4040"), where
// credentials go instead, and what ctxprof adds to the path.
struct HttpUrlHints {
  std::string example;
  std::string credentials_fix;
  std::string adds;
};
inline const HttpUrlHints kOtlpUrlHints = {
    "otlp=http://collector:4318", "give the Authorization header in OTEL_EXPORTER_OTLP_HEADERS",
    "/v1development/profiles"};

// Parses `value`, the value of option or variable `key`. kInvalidArgument naming `key` and
// the fix; a URL with credentials (user:password@host) is never repeated in the message.
Status ParseHttpUrl(std::string_view key, std::string_view value, const HttpUrlHints& hints,
                    HttpUrl* out);

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
  bool otel_context = false;  // otelcontext=true: publish OTEP 4947/4719 contexts
  ClockKind clock = ClockKind::kTsc;
  bool clock_given = false;  // clock= was present
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
  // jfrsync=: the JDK's Flight Recorder beside the session, with this configuration (a
  // predefined one, a .jfc path or +name+name...); its chunks end the file= recording.
  std::string jfrsync;
  // jfrthreshold=: with select=if-context, the JDK's duration events shorter than this are kept
  // only inside spans (default: each event's threshold in the configuration).
  uint64_t jfrsync_threshold_ns = 0;
  bool jfrsync_threshold_given = false;
  // contexts=triggered with jfrsync=: the writer writes every span (jfr.all_contexts) and the
  // untriggered ones are left out when the JDK's chunks join the file.
  bool jfrsync_triggered_contexts = false;
  // Not an option: the JDK recorder's origin for MonotonicClock, set by Profiler::Start once the
  // JDK's recorder runs (profiler/session/jdk_recorder.h); 0 otherwise.
  uint64_t clock_origin_nanos = 0;
  JfrOptions jfr;
  UploadOptions upload;
  OtlpOptions otlp;
};

StatusOr<Options> ParseOptions(std::string_view text);

// One agent option as help texts show it.
struct OptionHelp {
  const char* key;
  // A value ParseOptions takes that gives the same Options as leaving the key out; "" when the
  // key has no such value (what it sets is off or empty unless given).
  const char* default_value;
  const char* summary;  // one line, at most 74 characters
};

// Every key ParseOptions accepts, in the order of docs/SAMPLER.md's Options table.
const std::vector<OptionHelp>& OptionTable();

// Pieces of the parser, exposed for tests and for callers with single values. Each returns
// false and leaves its output untouched when the text is not a valid value.
// "10ms" -> 10,000,000; "2m" -> 120 s. A unit is required: ns, us, ms, s, m, h or d.
bool ParseDuration(std::string_view text, uint64_t* nanos);
// "64m" -> 67,108,864. Suffix k, m or g (powers of 1024, either case), or none for bytes.
bool ParseBytes(std::string_view text, uint64_t* bytes);
// "SIGPROF", "PROF", "27", "SIGRTMIN+3" -> the signal number.
bool ParseSignal(std::string_view text, int* signal);

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_OPTIONS_H_
