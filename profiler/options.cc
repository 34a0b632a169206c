#include "profiler/options.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include "context/context_block.h"

namespace ctxprof {
namespace {

bool ParseUnsigned(std::string_view text, uint64_t* value) {
  if (text.empty() || text.size() > 19) return false;  // 19 digits always fit in 64 bits
  uint64_t result = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    result = result * 10 + static_cast<uint64_t>(c - '0');
  }
  *value = result;
  return true;
}

// Duration units, largest first. "m" is minutes, as in the JDK's jcmd JFR.start maxage=; "ms"
// never collides with it because units are compared whole.
struct DurationUnit {
  const char* name;
  uint64_t nanos;
};
constexpr DurationUnit kDurationUnits[] = {{"d", 24 * 3600 * kNanosPerSecond},
                                           {"h", 3600 * kNanosPerSecond},
                                           {"m", 60 * kNanosPerSecond},
                                           {"s", kNanosPerSecond},
                                           {"ms", kNanosPerMilli},
                                           {"us", kNanosPerMicro},
                                           {"ns", 1}};

// Splits "123ms" into "123" and "ms".
void SplitNumberAndSuffix(std::string_view text, std::string_view* number,
                          std::string_view* suffix) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  *number = text.substr(0, digits);
  *suffix = text.substr(digits);
}

// Writes *out only when the product fits: __builtin_mul_overflow stores the wrapped product
// even on overflow, and a failed ParseDuration/ParseBytes must leave its output untouched.
bool MultiplyChecked(uint64_t value, uint64_t factor, uint64_t* out) {
  uint64_t product;
  if (__builtin_mul_overflow(value, factor, &product)) return false;
  *out = product;
  return true;
}

std::string Quote(std::string_view text) { return "'" + std::string(text) + "'"; }

// Builds "option 'key': value 'v' <problem>; <fix>".
std::string Problem(std::string_view key, std::string_view value, std::string_view problem,
                    std::string_view fix) {
  std::string message = "option " + Quote(key) + ": value " + Quote(value) + " ";
  message += problem;
  message += "; ";
  message += fix;
  return message;
}

// The largest unit that divides the duration exactly, so that messages read like the input.
std::string FormatNanos(uint64_t nanos) {
  for (const DurationUnit& unit : kDurationUnits) {  // largest first
    if (nanos != 0 && nanos % unit.nanos == 0) {
      return std::to_string(nanos / unit.nanos) + unit.name;
    }
  }
  return std::to_string(nanos) + "ns";
}

Status ParseDurationOption(std::string_view key, std::string_view value, uint64_t min_ns,
                           uint64_t max_ns, uint64_t* out) {
  uint64_t nanos = 0;
  if (!ParseDuration(value, &nanos)) {
    return Status::InvalidArgument(
        Problem(key, value, "is not a duration",
                "write a whole number with a unit ns, us, ms, s, m (minutes), h or d, e.g. " +
                    std::string(key) + "=" + FormatNanos(min_ns == 0 ? kNanosPerMilli : min_ns) +
                    " or " + std::string(key) + "=" + FormatNanos(max_ns)));
  }
  if (nanos < min_ns || nanos > max_ns) {
    return Status::InvalidArgument(
        Problem(key, value, "is out of range",
                "use a duration from " + FormatNanos(min_ns) + " to " + FormatNanos(max_ns)));
  }
  *out = nanos;
  return Status();
}

Status ParseBytesOption(std::string_view key, std::string_view value, uint64_t* out) {
  if (!ParseBytes(value, out) || *out == 0) {
    return Status::InvalidArgument(
        Problem(key, value, "is not a size",
                "write a positive whole number of bytes with an optional "
                "suffix k, m or g (KiB, MiB, GiB; either case), e.g. " +
                    std::string(key) + "=64m"));
  }
  return Status();
}

Status ParseIntInRange(std::string_view key, std::string_view value, int64_t min, int64_t max,
                       int64_t* out) {
  uint64_t number = 0;
  if (!ParseUnsigned(value, &number) || number < static_cast<uint64_t>(min) ||
      number > static_cast<uint64_t>(max)) {
    return Status::InvalidArgument(
        Problem(key, value, "is not a whole number in range",
                "use a number from " + std::to_string(min) + " to " + std::to_string(max)));
  }
  *out = static_cast<int64_t>(number);
  return Status();
}

Status ParseEvent(std::string_view value, Options* options) {
  CpuEngineKind cpu = CpuEngineKind::kNone;
  bool wall = false;
  bool alloc = false;
  bool lock = false;
  std::string_view rest = value;
  while (true) {
    const size_t plus = rest.find('+');
    const std::string_view part = rest.substr(0, plus);
    CpuEngineKind part_cpu = CpuEngineKind::kNone;
    if (part == "cpu") {
      part_cpu = CpuEngineKind::kPerf;
    } else if (part == "ctimer") {
      part_cpu = CpuEngineKind::kCpuTimer;
    } else if (part == "itimer") {
      part_cpu = CpuEngineKind::kITimer;
    } else if (part == "wall" && !wall) {
      wall = true;
    } else if (part == "alloc" && !alloc) {
      alloc = true;
    } else if (part == "lock" && !lock) {
      lock = true;
    } else {
      return Status::InvalidArgument(
          Problem("event", value, "is not an event",
                  "use cpu, ctimer, itimer, wall, alloc or lock, or several joined by '+' "
                  "(at most one CPU engine), e.g. event=cpu+wall or event=cpu+alloc"));
    }
    if (part_cpu != CpuEngineKind::kNone) {
      if (cpu != CpuEngineKind::kNone) {
        return Status::InvalidArgument(
            Problem("event", value, "names two CPU engines",
                    "pick one of cpu, ctimer or itimer (optionally +wall, +alloc, +lock)"));
      }
      cpu = part_cpu;
    }
    if (plus == std::string_view::npos) break;
    rest = rest.substr(plus + 1);
  }
  options->cpu_engine = cpu;
  options->wall_enabled = options->wall_enabled || wall;
  // alloc=/lock= given before or after event= keep their values.
  if (alloc && options->alloc_interval_bytes == 0) {
    options->alloc_interval_bytes = Options::kDefaultAllocIntervalBytes;
  }
  options->lock_enabled = options->lock_enabled || lock;
  return Status();
}

Status ParseAttributes(std::string_view value, Options* options) {
  std::vector<std::string> names;
  std::string_view rest = value;
  while (!rest.empty()) {
    const size_t semicolon = rest.find(';');
    const std::string_view name = rest.substr(0, semicolon);
    if (name.empty()) {
      return Status::InvalidArgument(
          Problem("attributes", value, "has an empty name",
                  "separate names with single semicolons, e.g. attributes=endpoint;tenant"));
    }
    names.emplace_back(name);
    if (semicolon == std::string_view::npos) break;
    rest = rest.substr(semicolon + 1);
    if (rest.empty()) {
      return Status::InvalidArgument(
          Problem("attributes", value, "ends with a semicolon",
                  "remove the trailing ';', e.g. attributes=endpoint;tenant"));
    }
  }
  if (names.size() > static_cast<size_t>(kAttributeSlots)) {
    return Status::InvalidArgument(
        Problem("attributes", value, "has too many names",
                "register at most " + std::to_string(kAttributeSlots) + " attributes"));
  }
  // Names are validated (characters, length, duplicates) by AttributeRegistry at start.
  options->attributes_given = true;
  options->attributes = std::move(names);
  return Status();
}

// "env:NAME" or "file:PATH".
Status ParseSecretSource(std::string_view key, std::string_view value, SecretSource* out) {
  const std::string_view env = "env:", file = "file:";
  if (value.substr(0, env.size()) == env && value.size() > env.size()) {
    *out = SecretSource{SecretSource::kEnvironment, std::string(value.substr(env.size()))};
    return Status();
  }
  if (value.substr(0, file.size()) == file && value.size() > file.size()) {
    *out = SecretSource{SecretSource::kFile, std::string(value.substr(file.size()))};
    return Status();
  }
  // The value may be the secret itself: the message must not repeat it.
  return Status::InvalidArgument(
      "option " + Quote(key) +
      ": the value must say where the secret is, not be the secret: write " + std::string(key) +
      "=env:VARIABLE or " + std::string(key) + "=file:PATH");
}

}  // namespace

Status ParseHttpUrl(std::string_view key, std::string_view value, const HttpUrlHints& hints,
                    HttpUrl* out) {
  std::string_view rest = value;
  bool https;
  if (rest.substr(0, 7) == "http://") {
    https = false;
    rest = rest.substr(7);
  } else if (rest.substr(0, 8) == "https://") {
    https = true;
    rest = rest.substr(8);
  } else {
    return Status::InvalidArgument(Problem(key, value, "is not an http:// or https:// URL",
                                           "give the server's base URL, e.g. " + hints.example));
  }
  const size_t slash = rest.find('/');
  const std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
  if (authority.find('@') != std::string_view::npos) {
    // Never echo it: the part before '@' is a password.
    return Status::InvalidArgument("option " + Quote(key) +
                                   ": the URL carries credentials (user@host); remove them and " +
                                   hints.credentials_fix);
  }
  if (path.find_first_of("?#") != std::string_view::npos) {
    return Status::InvalidArgument(Problem(key, value, "has a query or fragment",
                                           "give the base URL only; ctxprof adds " + hints.adds));
  }
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  std::string_view host = authority;
  uint64_t port = https ? 443 : 80;
  const size_t colon = authority.rfind(':');
  if (colon != std::string_view::npos && authority.find(']', colon) == std::string_view::npos) {
    host = authority.substr(0, colon);
    if (!ParseUnsigned(authority.substr(colon + 1), &port) || port == 0 || port > 65535) {
      return Status::InvalidArgument(
          Problem(key, value, "has a bad port", "use a port from 1 to 65535"));
    }
  }
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);  // an IPv6 literal
  }
  if (host.empty()) {
    return Status::InvalidArgument(Problem(key, value, "has no host", "e.g. " + hints.example));
  }
  out->https = https;
  out->host = std::string(host);
  out->port = static_cast<uint16_t>(port);
  out->path = std::string(path);
  return Status();
}

namespace {

// http://host[:port][/prefix] or https://...
Status ParseUploadUrl(std::string_view value, UploadOptions* upload) {
  HttpUrl url;
  if (Status parsed = ParseHttpUrl(
          "upload", value,
          {"upload=http://pyroscope:4040", "use uploadbasic=env:VARIABLE or uploadbasic=file:PATH",
           "/ingest and its parameters"},
          &url);
      !parsed.ok()) {
    return parsed;
  }
  upload->url = std::string(value);
  upload->https = url.https;
  upload->host = url.host;
  upload->port = url.port;
  upload->path_prefix = url.path;
  return Status();
}

// otlp=URL (the collector's base URL) or otlp=env (OTEL_EXPORTER_OTLP_* at the start).
Status ParseOtlpUrl(std::string_view value, OtlpOptions* otlp) {
  if (value != "env") {
    HttpUrl url;
    if (Status parsed = ParseHttpUrl("otlp", value, kOtlpUrlHints, &url); !parsed.ok()) {
      return parsed;
    }
  }
  otlp->url = std::string(value);
  return Status();
}

// Pyroscope label names: [A-Za-z0-9_.]; values without the characters of its name{k=v,...}
// syntax.
Status ParseUploadLabels(std::string_view value, UploadOptions* upload) {
  std::vector<std::pair<std::string, std::string>> labels;
  std::string_view rest = value;
  while (!rest.empty()) {
    const size_t semicolon = rest.find(';');
    const std::string_view item = rest.substr(0, semicolon);
    const size_t equals = item.find('=');
    const std::string_view name = item.substr(0, equals);
    const std::string_view label_value =
        equals == std::string_view::npos ? "" : item.substr(equals + 1);
    bool valid = !name.empty() && !label_value.empty() &&
                 label_value.find_first_of(",{}=\"") == std::string_view::npos;
    for (char c : name) {
      valid = valid && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '_' || c == '.');
    }
    if (!valid) {
      return Status::InvalidArgument(
          Problem("uploadlabels", value, "is not a list of name=value labels",
                  "write uploadlabels=env=prod;region=eu (names of letters, digits, '_' and "
                  "'.'; values without , { } = or \")"));
    }
    labels.emplace_back(name, label_value);
    if (semicolon == std::string_view::npos) break;
    rest = rest.substr(semicolon + 1);
  }
  upload->labels = std::move(labels);
  return Status();
}

Status ApplyOption(std::string_view key, std::string_view value, Options* options,
                   bool* interval_given, bool* wall_given) {
  const std::vector<OptionHelp>& table = OptionTable();
  if (std::none_of(table.begin(), table.end(),
                   [key](const OptionHelp& option) { return key == option.key; })) {
    std::string known;
    for (const OptionHelp& option : table)
      known += (known.empty() ? "" : ", ") + std::string(option.key);
    return Status::InvalidArgument("unknown option " + Quote(key) + " (value " + Quote(value) +
                                   "); known options: " + known);
  }
  int64_t number = 0;
  if (key == "event") return ParseEvent(value, options);
  if (key == "interval") {
    *interval_given = true;
    return ParseDurationOption(key, value, Options::kMinCpuIntervalNs, Options::kMaxIntervalNs,
                               &options->cpu_interval_ns);
  }
  if (key == "wall") {
    *wall_given = true;
    options->wall_enabled = true;
    return ParseDurationOption(key, value, Options::kMinWallIntervalNs, Options::kMaxIntervalNs,
                               &options->wall_interval_ns);
  }
  if (key == "filter") {
    if (value != "context") {
      return Status::InvalidArgument(
          Problem(key, value, "is not a filter", "the only filter is filter=context"));
    }
    options->filter_context = true;
    return Status();
  }
  if (key == "threads") {
    Status parsed = ParseIntInRange(key, value, 1, Options::kMaxWallThreadsPerTick, &number);
    if (!parsed.ok()) return parsed;
    options->wall_threads_per_tick = static_cast<int>(number);
    return Status();
  }
  if (key == "depth") {
    Status parsed = ParseIntInRange(key, value, 1, kMaxStackDepth, &number);
    if (!parsed.ok()) return parsed;
    options->depth = static_cast<int>(number);
    return Status();
  }
  if (key == "unwind") {
    if (value == "dwarf") {
      options->unwind = UnwindKind::kDwarf;
    } else if (value == "libunwind") {
      options->unwind = UnwindKind::kLibunwind;
    } else if (value == "fp") {
      options->unwind = UnwindKind::kFramePointer;
    } else {
      return Status::InvalidArgument(Problem(key, value, "is not a stack walking method",
                                             "use unwind=dwarf, unwind=libunwind or unwind=fp"));
    }
    return Status();
  }
  if (key == "cstack") {
    if (value == "no") {
      options->cstack = CStackKind::kNo;
    } else if (value == "native") {
      options->cstack = CStackKind::kNative;
    } else if (value == "dwarf" || value == "fp") {
      options->cstack = CStackKind::kMixed;
      options->unwind = value == "fp" ? UnwindKind::kFramePointer : UnwindKind::kDwarf;
    } else if (value == "java+native") {
      options->cstack = CStackKind::kMixed;
    } else {
      return Status::InvalidArgument(
          Problem(key, value, "is not a native stack mode",
                  "use cstack=dwarf (the default), cstack=fp, cstack=no or cstack=native"));
    }
    return Status();
  }
  if (key == "kernel") {
    if (value != "true" && value != "false") {
      return Status::InvalidArgument(
          Problem(key, value, "is not true or false",
                  "use kernel=false to leave kernel frames out of CPU samples"));
    }
    options->kernel_frames = value == "true";
    return Status();
  }
  if (key == "otelcontext") {
    if (value != "true" && value != "false") {
      return Status::InvalidArgument(
          Problem(key, value, "is not true or false",
                  "use otelcontext=true to publish thread contexts for OpenTelemetry readers"));
    }
    options->otel_context = value == "true";
    return Status();
  }
  if (key == "clock") {
    if (value == "tsc") {
      options->clock = ClockKind::kTsc;
    } else if (value == "monotonic") {
      options->clock = ClockKind::kMonotonic;
    } else {
      return Status::InvalidArgument(
          Problem(key, value, "is not a clock", "use clock=tsc or clock=monotonic"));
    }
    options->clock_given = true;
    return Status();
  }
  if (key == "signal" || key == "wallsignal") {
    if (!ParseSignal(value, key == "signal" ? &options->signal : &options->wall_signal)) {
      return Status::InvalidArgument(
          Problem(key, value, "is not a usable signal",
                  "use a signal name or number such as SIGPROF, 27 or SIGRTMIN+2 (not "
                  "SIGKILL, SIGSTOP, SIGSEGV, SIGBUS, SIGILL, SIGFPE or SIGABRT)"));
    }
    return Status();
  }
  if (key == "buffer") {
    Status parsed =
        ParseIntInRange(key, value, Options::kMinBufferSlots, Options::kMaxBufferSlots, &number);
    if (!parsed.ok()) return parsed;
    options->buffer_slots = static_cast<uint32_t>(number);
    return Status();
  }
  if (key == "file" || key == "repository") {
    if (value.empty()) {
      return Status::InvalidArgument(
          Problem(key, value, "is empty",
                  key == "file" ? "give a path, e.g. file=/tmp/profile.jfr"
                                : "give a folder, e.g. repository=/var/tmp/ctxprof"));
    }
    (key == "file" ? options->file : options->repository) = std::string(value);
    return Status();
  }
  if (key == "attributes") return ParseAttributes(value, options);
  if (key == "alloc") {
    uint64_t bytes = 0;
    if (!ParseBytes(value, &bytes) || bytes == 0 || bytes > Options::kMaxAllocIntervalBytes) {
      return Status::InvalidArgument(
          Problem(key, value, "is not an allocation sampling interval",
                  "write a size from 1 byte to 1g with an optional k, m or g suffix, e.g. "
                  "alloc=512k (about one sample per 512 KiB a thread allocates)"));
    }
    options->alloc_interval_bytes = bytes;
    return Status();
  }
  if (key == "lock") {
    options->lock_enabled = true;
    return ParseDurationOption(key, value, 0, Options::kMaxIntervalNs, &options->lock_threshold_ns);
  }
  if (key == "select") {
    if (value == "all") {
      options->select = EventSelect::kAll;
    } else if (value == "if-context") {
      options->select = EventSelect::kIfContext;
    } else {
      return Status::InvalidArgument(
          Problem(key, value, "is not an event selection",
                  "use select=all (the alloc=/lock= rules for every thread) or "
                  "select=if-context (every lock wait and finer allocation sampling on "
                  "threads with a context)"));
    }
    return Status();
  }
  if (key == "live") {
    return Status::InvalidArgument("option 'live' takes no value (got " + Quote(value) +
                                   "); write it alone, e.g. alloc=512k,live");
  }
  if (key == "chunksize") return ParseBytesOption(key, value, &options->jfr.chunk_size_bytes);
  if (key == "maxsize") return ParseBytesOption(key, value, &options->jfr.max_size_bytes);
  if (key == "chunktime" || key == "maxage" || key == "flush") {
    uint64_t* target = key == "chunktime" ? &options->jfr.chunk_time_ns
                       : key == "maxage"  ? &options->jfr.max_age_ns
                                          : &options->jfr.flush_interval_ns;
    return ParseDurationOption(key, value, kNanosPerMilli, 365ull * 24 * 3600 * kNanosPerSecond,
                               target);
  }
  if (key == "cpusamples") {
    if (value != "jdk" && value != "ctxprof") {
      return Status::InvalidArgument(
          Problem(key, value, "is not a CPU sample event",
                  "use cpusamples=jdk (jdk.ExecutionSample) or cpusamples=ctxprof"));
    }
    options->jfr.cpu_samples_as_ctxprof = value == "ctxprof";
    return Status();
  }
  if (key == "wallsamples") {
    if (value != "profiler" && value != "jdk") {
      return Status::InvalidArgument(
          Problem(key, value, "is not a wall sample event",
                  "use wallsamples=profiler (profiler.WallClockSample) or wallsamples=jdk "
                  "(jdk.NativeMethodSample)"));
    }
    options->jfr.wall_samples_as_jdk = value == "jdk";
    return Status();
  }
  if (key == "contextid") {
    if (value != "true" && value != "false") {
      return Status::InvalidArgument(
          Problem(key, value, "is not true or false", "use contextid=true or contextid=false"));
    }
    options->jfr.context_id = value == "true";
    options->jfr.context_id_given = true;
    return Status();
  }
  if (key == "contexts") {
    if (value != "triggered" && value != "all") {
      return Status::InvalidArgument(
          Problem(key, value, "is not triggered or all",
                  "use contexts=triggered (a span becomes a ctxprof.Context event when a "
                  "recorded event falls inside it) or contexts=all (every span)"));
    }
    options->jfr.all_contexts = value == "all";
    options->jfr.contexts_given = true;
    return Status();
  }
  if (key == "jfrsync") {
    bool valid = !value.empty() && value != "+" && value.find("++") == std::string_view::npos &&
                 !(value.size() > 1 && value.back() == '+' && value.front() == '+');
    if (!valid) {
      return Status::InvalidArgument(
          Problem(key, value, "is not a JFR configuration",
                  "give a predefined configuration (jfrsync=default, jfrsync=profile), a .jfc "
                  "file, or events to enable, e.g. jfrsync=+jdk.FileRead+jdk.SocketRead"));
    }
    options->jfrsync = std::string(value);
    return Status();
  }
  if (key == "jfrthreshold") {
    options->jfrsync_threshold_given = true;
    return ParseDurationOption(key, value, 0, Options::kMaxIntervalNs,
                               &options->jfrsync_threshold_ns);
  }
  if (key == "upload") return ParseUploadUrl(value, &options->upload);
  if (key == "otlp") return ParseOtlpUrl(value, &options->otlp);
  if (key == "uploadname") {
    bool valid = !value.empty();
    for (char c : value) {
      valid = valid && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '/' || c == '-');
    }
    if (!valid) {
      return Status::InvalidArgument(
          Problem(key, value, "is not an application name",
                  "use letters, digits and _ . / - (Pyroscope's rule), e.g. "
                  "uploadname=checkout-service"));
    }
    options->upload.name = std::string(value);
    return Status();
  }
  if (key == "uploadlabels") return ParseUploadLabels(value, &options->upload);
  if (key == "uploadtoken") return ParseSecretSource(key, value, &options->upload.token);
  if (key == "uploadbasic") return ParseSecretSource(key, value, &options->upload.basic);
  if (key == "uploadtenant") return ParseSecretSource(key, value, &options->upload.tenant);
  if (key == "uploadca") {
    if (value.empty()) {
      return Status::InvalidArgument(
          Problem(key, value, "is empty", "give a PEM file, e.g. uploadca=/etc/ssl/my-ca.pem"));
    }
    options->upload.ca_file = std::string(value);
    return Status();
  }
  // A key of OptionTable() that no branch above parses (options_test catches it).
  return Status::InvalidArgument("option " + Quote(key) + " is listed but not parsed");
}

// jfrsync= and what it needs from the other options: one recording file, and every span
// written (see below).
Status CheckJfrSync(Options* options) {
  if (options->file.empty() && options->repository.empty()) {
    return Status::InvalidArgument(
        Problem("jfrsync", options->jfrsync, "needs file= or repository=",
                "the JDK's events are added to ctxprof's recording: add file=PATH.jfr or "
                "repository=DIR"));
  }
  // The JDK's events reach the file only when its recorder stops: the writer writes every span,
  // and with contexts=triggered given, those without an event are left out then.
  options->jfrsync_triggered_contexts = options->jfr.contexts_given && !options->jfr.all_contexts;
  options->jfr.all_contexts = true;
  if (options->clock_given && options->clock == ClockKind::kTsc) {
    return Status::InvalidArgument(
        Problem("clock", "tsc", "conflicts with jfrsync=",
                "with jfrsync= the recording counts time in the JDK's own ticks: remove clock="));
  }
  options->clock = ClockKind::kMonotonic;
  return Status();
}

// upload= and what it needs from the other options; fills the upload defaults.
Status CheckUpload(Options* options) {
  const std::string& url = options->upload.url;
  if (options->repository.empty()) {
    return Status::InvalidArgument(
        Problem("upload", url, "needs repository=",
                "upload= sends each finished chunk file of a repository: add "
                "repository=DIR (file= keeps every chunk in one file)"));
  }
  if (options->jfr.context_id_given && !options->jfr.context_id) {
    return Status::InvalidArgument(
        Problem("contextid", "false", "conflicts with upload=",
                "Pyroscope takes each sample's context from its contextId; remove "
                "contextid=false"));
  }
  if (options->jfr.cpu_samples_as_ctxprof || options->jfr.wall_samples_as_jdk) {
    return Status::InvalidArgument(
        Problem(options->jfr.cpu_samples_as_ctxprof ? "cpusamples" : "wallsamples",
                options->jfr.cpu_samples_as_ctxprof ? "ctxprof" : "jdk", "conflicts with upload=",
                "Pyroscope reads CPU samples as jdk.ExecutionSample and wall samples as "
                "profiler.WallClockSample: remove the option"));
  }
  // Pyroscope scales every CPU and wall sample of an upload by one sampleRate (Hz).
  const bool cpu = options->cpu_engine != CpuEngineKind::kNone;
  const uint64_t interval = cpu ? options->cpu_interval_ns : options->wall_interval_ns;
  if (cpu && options->wall_enabled && options->wall_interval_ns != interval) {
    return Status::InvalidArgument(
        Problem("wall", FormatNanos(options->wall_interval_ns),
                "differs from interval=" + FormatNanos(interval) + " with upload=",
                "Pyroscope takes one sample rate per upload: give both the same interval, "
                "e.g. interval=" +
                    FormatNanos(interval) + ",wall=" + FormatNanos(interval)));
  }
  if (kNanosPerSecond % interval != 0) {
    return Status::InvalidArgument(
        Problem(cpu ? "interval" : "wall", FormatNanos(interval),
                "is not a whole number of samples per second, as upload= needs",
                "Pyroscope takes the sample rate in whole Hz: use an interval that divides "
                "1s, e.g. 10ms or 20ms"));
  }
  // Pyroscope's parser reads a jdk.JavaMonitorEnter or jdk.ThreadPark duration as nanoseconds,
  // whatever the chunk's ticksPerSecond: chunks that count nanoseconds make both readings agree.
  if (options->clock_given && options->clock != ClockKind::kMonotonic) {
    return Status::InvalidArgument(
        Problem("clock", "tsc", "conflicts with upload=",
                "Pyroscope reads lock and park durations as nanoseconds, so uploaded chunks "
                "count time in nanoseconds: remove clock=tsc"));
  }
  options->clock = ClockKind::kMonotonic;
  options->jfr.context_id = true;
  options->jfr.pyroscope = true;
  if (options->jfr.chunk_time_ns == 0) options->jfr.chunk_time_ns = 10 * kNanosPerSecond;
  if (options->jfr.chunk_size_bytes == 0) options->jfr.chunk_size_bytes = 3ull << 20;
  return Status();
}

}  // namespace

bool ParseDuration(std::string_view text, uint64_t* nanos) {
  std::string_view number_text;
  std::string_view unit;
  SplitNumberAndSuffix(text, &number_text, &unit);
  uint64_t number = 0;
  if (!ParseUnsigned(number_text, &number)) return false;
  for (const DurationUnit& known : kDurationUnits) {
    if (unit == known.name) return MultiplyChecked(number, known.nanos, nanos);
  }
  return false;
}

bool ParseBytes(std::string_view text, uint64_t* bytes) {
  std::string_view number_text;
  std::string_view suffix;
  SplitNumberAndSuffix(text, &number_text, &suffix);
  uint64_t number = 0;
  if (!ParseUnsigned(number_text, &number)) return false;
  uint64_t factor = 0;
  if (suffix.empty()) {
    factor = 1;
  } else if (suffix == "k" || suffix == "K") {
    factor = 1ull << 10;
  } else if (suffix == "m" || suffix == "M") {
    factor = 1ull << 20;
  } else if (suffix == "g" || suffix == "G") {
    factor = 1ull << 30;
  } else {
    return false;
  }
  return MultiplyChecked(number, factor, bytes);
}

bool ParseSignal(std::string_view text, int* signal) {
  static constexpr struct {
    const char* name;
    int number;
  } kNames[] = {{"HUP", SIGHUP},   {"INT", SIGINT},       {"QUIT", SIGQUIT}, {"TRAP", SIGTRAP},
                {"USR1", SIGUSR1}, {"USR2", SIGUSR2},     {"PIPE", SIGPIPE}, {"ALRM", SIGALRM},
                {"TERM", SIGTERM}, {"CHLD", SIGCHLD},     {"URG", SIGURG},   {"XCPU", SIGXCPU},
                {"XFSZ", SIGXFSZ}, {"VTALRM", SIGVTALRM}, {"PROF", SIGPROF}, {"WINCH", SIGWINCH},
                {"IO", SIGIO},     {"PWR", SIGPWR},       {"SYS", SIGSYS}};
  std::string_view name = text;
  if (name.substr(0, 3) == "SIG") name = name.substr(3);
  int number = -1;
  uint64_t parsed = 0;
  if (ParseUnsigned(name, &parsed)) {
    number = parsed <= static_cast<uint64_t>(SIGRTMAX) ? static_cast<int>(parsed) : -1;
  } else if (name.substr(0, 5) == "RTMIN") {
    std::string_view offset = name.substr(5);
    if (offset.empty()) {
      number = SIGRTMIN;
    } else if (offset[0] == '+' && ParseUnsigned(offset.substr(1), &parsed) &&
               parsed <= static_cast<uint64_t>(SIGRTMAX - SIGRTMIN)) {
      number = SIGRTMIN + static_cast<int>(parsed);
    }
  } else {
    for (const auto& entry : kNames) {
      if (name == entry.name) number = entry.number;
    }
  }
  // Signals that cannot be caught, or that report faults we must leave to the host.
  if (number <= 0 || number == SIGKILL || number == SIGSTOP || number == SIGSEGV ||
      number == SIGBUS || number == SIGILL || number == SIGFPE || number == SIGABRT) {
    return false;
  }
  *signal = number;
  return true;
}

// Keys the parser takes (ApplyOption refuses any other), defaults that parse to the defaults of
// Options (tests/options/options_test.cc checks both).
const std::vector<OptionHelp>& OptionTable() {
  static const std::vector<OptionHelp> table = {
      {"event", "cpu", "cpu, ctimer, itimer, wall, alloc, lock joined by + (one CPU engine)"},
      {"interval", "10ms",
       "CPU sampling interval, 100us..1h (event=wall alone: the wall interval)"},
      {"wall", "", "wall-clock sampling at this interval, 1ms..1h (50ms with event=wall)"},
      {"filter", "", "context: wall-sample only threads that have a context"},
      {"threads", "16", "wall: threads signalled per tick, 1..4096"},
      {"depth", "128", "native frames per sample, 1..2048"},
      {"unwind", "dwarf", "native stack walker: dwarf, libunwind or fp"},
      {"cstack", "dwarf", "in a JVM: dwarf or fp (mixed stack), no (Java frames only), native"},
      {"kernel", "true", "kernel frames in CPU samples: true or false"},
      {"clock", "tsc", "timestamps: tsc or monotonic (monotonic with upload=)"},
      {"signal", "SIGPROF", "the CPU engines' signal: a name or number"},
      {"wallsignal", "SIGVTALRM", "the wall engine's signal, not the CPU engines'"},
      {"buffer", "2048", "sample buffer slots, 16..65536"},
      {"file", "", "write a JFR recording to this file"},
      {"repository", "", "write a JFR file per chunk into this folder (not with file=)"},
      {"attributes", "", "context attribute names, ';'-separated, bound to slots 0, 1, ..."},
      {"alloc", "", "an allocation sample per SIZE bytes, 1..1g (512k with event=alloc; JVM)"},
      {"live", "", "no value: also the sampled objects alive at the end (needs alloc=)"},
      {"lock", "", "lock waits at least this long, 0ns..1h (10ms with event=lock; JVM)"},
      {"select", "all",
       "all, or if-context: all lock waits, finer alloc on threads with a context"},
      {"chunksize", "", "start a new chunk at this size, e.g. 64m (3m with upload=)"},
      {"maxsize", "", "repository=: delete the oldest chunks beyond this total size"},
      {"chunktime", "", "start a new chunk after this long, 1ms..365d (10s with upload=)"},
      {"maxage", "", "repository=: delete chunks that ended longer ago than this, e.g. 1d"},
      {"flush", "1s", "make what is buffered readable at this interval, 1ms..365d"},
      {"cpusamples", "jdk", "CPU sample event: jdk (jdk.ExecutionSample) or ctxprof"},
      {"wallsamples", "profiler", "wall sample event: profiler (profiler.WallClockSample) or jdk"},
      {"contexts", "triggered", "spans as ctxprof.Context: triggered (an event inside) or all"},
      {"contextid", "false", "true: each sample and event carries a contextId (Pyroscope)"},
      {"jfrsync", "", "default, profile, a .jfc or +event+event: the JDK's recorder too"},
      {"jfrthreshold", "", "jfrsync, select=if-context: JDK events this short only in spans"},
      {"upload", "", "http(s)://host[:port][/prefix]: POST chunks to Pyroscope (repository=)"},
      {"uploadname", "ctxprof", "the application name in Pyroscope"},
      {"uploadlabels", "", "static series labels, k=v;k2=v2"},
      {"uploadtoken", "", "env:VARIABLE or file:PATH holding a bearer token"},
      {"uploadbasic", "", "env:VARIABLE or file:PATH holding user:password"},
      {"uploadtenant", "", "env:VARIABLE or file:PATH holding the tenant (X-Scope-OrgID)"},
      {"uploadca", "", "PEM CA certificates to verify an https server with"},
      {"otlp", "", "http(s)://host[:port][/prefix] or env: push OTLP profiles (repository=)"},
      {"otelcontext", "false", "true: publish contexts for OpenTelemetry readers (OTEP 4947)"},
  };
  return table;
}

StatusOr<Options> ParseOptions(std::string_view text) {
  Options options;
  bool interval_given = false;
  bool wall_given = false;
  std::string_view rest = text;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (item.empty()) {
      return Status::InvalidArgument("empty option in " + Quote(text) +
                                     "; separate key=value pairs with single commas");
    }
    const size_t equals = item.find('=');
    if (item == "live") {  // async-profiler's spelling: a flag without a value
      options.live = true;
    } else if (equals == std::string_view::npos) {
      return Status::InvalidArgument("option " + Quote(item) +
                                     " has no value; write it as key=value, e.g. interval=10ms");
    } else if (Status applied = ApplyOption(item.substr(0, equals), item.substr(equals + 1),
                                            &options, &interval_given, &wall_given);
               !applied.ok()) {
      return applied;
    }
    if (comma != std::string_view::npos && rest.empty()) {
      return Status::InvalidArgument("option string " + Quote(text) +
                                     " ends with a comma; remove it");
    }
  }
  // event=wall alone: interval= sets the wall interval unless wall= did.
  if (options.cpu_engine == CpuEngineKind::kNone && interval_given && !wall_given) {
    if (options.cpu_interval_ns < Options::kMinWallIntervalNs) {
      return Status::InvalidArgument(
          Problem("interval", FormatNanos(options.cpu_interval_ns), "is too small for event=wall",
                  "use a wall interval of at least " + FormatNanos(Options::kMinWallIntervalNs)));
    }
    options.wall_interval_ns = options.cpu_interval_ns;
  }
  if (options.cpu_engine != CpuEngineKind::kNone && options.wall_enabled &&
      options.signal == options.wall_signal) {
    return Status::InvalidArgument(Problem(
        "wallsignal", std::to_string(options.wall_signal), "is also the CPU engine's signal",
        "give cpu and wall sampling different signals (defaults: signal=SIGPROF, "
        "wallsignal=SIGVTALRM)"));
  }
  if (!options.file.empty() && !options.repository.empty()) {
    return Status::InvalidArgument(
        Problem("repository", options.repository, "conflicts with file=" + options.file,
                "write one recording file (file=) or a chunk repository (repository=), "
                "not both"));
  }
  if (!options.upload.url.empty()) {
    if (Status checked = CheckUpload(&options); !checked.ok()) return checked;
  }
  if (!options.jfrsync.empty()) {
    if (Status checked = CheckJfrSync(&options); !checked.ok()) return checked;
  }
  if (!options.otlp.url.empty() && options.repository.empty()) {
    return Status::InvalidArgument(
        Problem("otlp", options.otlp.url, "needs repository=",
                "otlp= sends each finished chunk file of a repository: add "
                "repository=DIR (file= keeps every chunk in one file)"));
  }
  if (!options.otlp.url.empty()) {
    // Chunks finish, and are pushed, on upload='s schedule unless the options give their own.
    if (options.jfr.chunk_time_ns == 0) options.jfr.chunk_time_ns = 10 * kNanosPerSecond;
    if (options.jfr.chunk_size_bytes == 0) options.jfr.chunk_size_bytes = 3ull << 20;
  }
  if (options.filter_context && !options.wall_enabled) {
    return Status::InvalidArgument(
        Problem("filter", "context", "applies only to wall sampling",
                "add wall to the events, e.g. event=cpu+wall or wall=20ms"));
  }
  if (options.live && options.alloc_interval_bytes == 0) {
    return Status::InvalidArgument(
        "option 'live' applies to allocation sampling; add alloc=SIZE, e.g. alloc=512k,live");
  }
  if (options.select == EventSelect::kIfContext && options.alloc_interval_bytes == 0 &&
      !options.lock_enabled && options.jfrsync.empty()) {
    return Status::InvalidArgument(
        Problem("select", "if-context", "applies only to allocation and lock events and jfrsync=",
                "add alloc=SIZE and/or lock=DURATION, e.g. lock=100ms,select=if-context, or "
                "jfrsync=CONFIG"));
  }
  if (options.jfrsync_threshold_given &&
      (options.jfrsync.empty() || options.select != EventSelect::kIfContext)) {
    return Status::InvalidArgument(
        Problem("jfrthreshold", FormatNanos(options.jfrsync_threshold_ns),
                "applies only to jfrsync= with select=if-context",
                "add jfrsync=CONFIG,select=if-context, or remove jfrthreshold="));
  }
  if ((options.alloc_interval_bytes != 0 || options.lock_enabled) && options.file.empty() &&
      options.repository.empty()) {
    return Status::InvalidArgument(
        std::string("option '") + (options.alloc_interval_bytes != 0 ? "alloc" : "lock") +
        "': allocation and lock events are written to the JFR recording only; add "
        "file=PATH.jfr or repository=DIR");
  }
  return options;
}

}  // namespace ctxprof
