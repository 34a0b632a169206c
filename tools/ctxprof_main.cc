// ctxprof: the command-line tool (docs/TOOLS.md). Exit codes: 0 ok, 1 bad input, failed output
// or a failed attach, 2 usage error; `record` exits with the JVM's status.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "ctxprof_version.h"
#include "profiler/export/labels.h"
#include "profiler/export/otlp_profile.h"
#include "profiler/export/profile.h"
#include "profiler/options.h"
#include "profiler/wire/gzip.h"
#include "tools/attach.h"
#include "tools/collapsed.h"
#include "tools/flame.h"
#include "tools/inputs.h"
#include "tools/otel_reader.h"
#include "tools/pprof.h"
#include "tools/record.h"
#include "tools/report.h"

namespace ctxprof::tools {
namespace {

constexpr int kOk = 0;
constexpr int kBadInput = 1;
constexpr int kUsage = 2;

// `ctxprof --help` is kMainUsage, one line per entry of kCommands, then kMainNotes.
constexpr const char* kMainUsage = "usage: ctxprof COMMAND [options]\n\nCommands:\n";
constexpr const char* kMainNotes = R"help(
Run "ctxprof COMMAND --help" for a command's options, "ctxprof --version" for the version.
Documentation: docs/TOOLS.md.
Exit status: 0 ok, 1 bad input, unwritable output or a failed attach, 2 usage error.
)help";

constexpr const char* kReportHelp =
    R"help(usage: ctxprof report RECORDING... [--by ATTRIBUTE | --threads] [--top N] [--events E]
                      [--min-duration D] [--max-duration D] [--quiet]
       ctxprof report RECORDING... --latency [--by ATTRIBUTE] [--quiet]

Per value of ATTRIBUTE (default: "endpoint" if recorded, else the first attribute), the hottest
methods: self and total samples, each as a share of the value's samples and of all samples,
then sections for samples whose context lacks the attribute and for samples without context.
RECORDING: a JFR file, or a folder of them (a repository); several add up. A recording that is
being written is read up to its last flush, and stderr says so.
With --events alloc the amounts are bytes allocated, with --events lock time blocked, and the
allocated (or waited-for) class is the leaf of each stack.
  --by ATTRIBUTE   attribute name as registered ("http.route") or as JFR field ("http_route")
  --threads        one section per thread (name and OS thread id) instead
  --top N          rows per section (default 10)
  --events E       cpu, wall, all (cpu and wall samples; the default), alloc
                   (jdk.ObjectAllocationSample; in ctxprof uploads jdk.ObjectAllocationInNewTLAB)
                   or lock (jdk.JavaMonitorEnter, jdk.ThreadPark); or event types with a stack,
                   comma-separated (jdk.FileRead,jdk.SocketRead, an application's shop.Order)
  --value FIELD    with --events TYPE: the numeric field to add up (default duration; e.g.
                   bytesRead): time spans in ns, data amounts in bytes, else the number
  --min-duration D only the events inside spans at least D long (D with its unit: ns, us, ms,
                   s or m, e.g. 50ms); an event's span is its ctxprof.Context on its thread
  --max-duration D only the events inside spans at most D long
  --latency        per ATTRIBUTE value: spans, p50/p90/p99/max span length (from the
                   ctxprof.SpanLatency histograms of all spans, within 0.8 %) and CPU per span
  --quiet          no progress on stderr
)help";

constexpr const char* kFlameHelp =
    R"help(usage: ctxprof flame RECORDING... -o FLAME.html [--by ATTRIBUTE] [--events E]
                     [--min-duration D] [--max-duration D] [--quiet]
       ctxprof flame --diff BEFORE AFTER -o DIFF.html [--by ATTRIBUTE] [--events E]
       ctxprof flame --diff --min-duration D | --max-duration D RECORDING... -o DIFF.html

Writes one self-contained HTML page (no network resources): an icicle graph with a selector
("all", each ATTRIBUTE value, "(unset)", "(no context)"), search and click-to-zoom.
The URL fragment picks the initial view: FLAME.html#by=%2Fcheckout&search=Handler
RECORDING: as for report (files, repository folders, recordings being written).
With --diff, the graph of AFTER coloured by each frame's change of share since BEFORE (red:
more, blue: less), per selected value in both recordings; "widths" switches to BEFORE's shape.
BEFORE and AFTER are one recording each (a file or a repository folder).
  -o FILE          the page to write (required)
  --diff           compare two recordings (BEFORE first)
  --by ATTRIBUTE   as for report (default: "endpoint" if recorded, else the first attribute)
  --events E       cpu, wall, all, alloc (widths in bytes), lock (widths in ns) or event types;
                   as for report
  --value FIELD    with --events TYPE: the field that sizes the frames (default duration)
  --min-duration D, --max-duration D
                   only the events inside spans at least (at most) D long, as for report; with
                   --diff one of them compares those spans (AFTER) with the other spans (BEFORE)
                   of the same recordings: "why are the slow requests slow"
  --quiet          no progress on stderr
)help";

constexpr const char* kConvertHelp =
    R"help(usage: ctxprof convert --to collapsed|pprof|otlp RECORDING... -o OUT [--events E] [--labels LIST]
                       [--min-duration D] [--max-duration D] [--quiet]

  --to collapsed   folded stacks, root first, context as leading "[name=value]" frames:
                   [endpoint=/checkout];[tenant=acme];com.example.Main.main;... 12
  --to pprof       gzipped perftools.profiles.Profile; sample types samples/count and one per
                   kind (cpu and wall nanoseconds...); labels "kind" and one per attribute
                   (go tool pprof -tagfocus endpoint=/checkout OUT)
  --to otlp        OpenTelemetry profiles (ProfilesData, profiles/v1development): one profile
                   per sample kind, attributes per context attribute, trace and span ids as
                   links
  RECORDING        as for report (files, repository folders, recordings being written)
  -o OUT           the file to write (required; "-" = stdout)
  --events E       cpu, wall, all, alloc or lock, as for report; collapsed counts are then bytes
                   or ns, pprof and OTLP have alloc/bytes or monitor and park/nanoseconds values;
                   or event types (jdk.FileRead,...), each its own pprof sample type / OTLP
                   profile (TYPE/bytes, TYPE/nanoseconds or TYPE/count)
  --value FIELD    with --events TYPE: the numeric field to add up (default duration)
  --labels LIST    pprof labels / OTLP attributes, comma-separated: kind, thread, thread_id,
                   trace_id, span_id, attribute names, or none (default: kind and the
                   attributes for pprof, the attributes for OTLP; ids make a series per
                   request or thread in Pyroscope and most backends)
  --min-duration D, --max-duration D
                   only the events inside spans at least (at most) D long, as for report
  --quiet          no progress on stderr
)help";

constexpr const char* kRecordHelp =
    R"help(usage: ctxprof record [options] -- java [JVM options] MAIN|-jar APP [args]

Runs the JVM with -agentpath:<libctxprof.so>=start,<options>,file=<OUT> and exits with its status.
The options are checked with the agent's own parser first (a refusal exits 2, no JVM runs); if
the JVM exits 0 but its agent wrote no recording (it refused to start), record exits 1.
  -o OUT               recording to write (default ctxprof.jfr)
  --lib PATH           libctxprof.so (default: ../lib/ from ctxprof, or next to it; docs/TOOLS.md)
  --event E            cpu, ctimer, itimer, wall, alloc, lock, joined by + (agent key event)
  --interval D         CPU interval, e.g. 10ms (interval)
  --wall D             wall-clock interval, e.g. 20ms (wall)
  --attributes A;B     context attribute names (attributes)
  --depth N            frames per sample (depth)
  --filter context     wall samples only threads with a context (filter)
  --alloc SIZE         allocation sampling, e.g. 512k (alloc)
  --lock D             lock waits at least this long, e.g. 10ms (lock)
  --select S           all or if-context (select)
  --jfrsync CONFIG     the JDK's recorder too: default, profile, a .jfc or +event+event (jfrsync)
  --live               also the sampled objects still alive at the end (live; needs --alloc)
  --otelcontext true   publish contexts for OpenTelemetry readers, OTEP 4947 (otelcontext)
  --clock, --unwind, --chunksize, --chunktime   agent keys of the same name
  --option KEY=VALUE   any other agent key (docs/SAMPLER.md)
)help";

constexpr const char* kAttachHelp =
    R"help(usage: ctxprof attach PID start [record's options] [-o OUT]
       ctxprof attach PID stop | status
       ctxprof attach PID dump -o FILE

Loads libctxprof into the running JVM PID (HotSpot dynamic attach; no JDK tool needed) and runs
one command there; the agent's answer is printed, and a refusal exits 1 with its message.
  start     start profiling, recording to OUT (default ctxprof.jfr); takes the options of
            ctxprof record: --event, --interval, --wall, --attributes, --depth, --filter,
            --alloc, --lock, --select, --jfrsync, --otelcontext, --live, --clock, --unwind,
            --chunksize, --chunktime, --option KEY=VALUE; with --option repository=DIR
            (what otlp= and upload= need) the recording goes to DIR, one file per chunk
  stop      stop profiling and finish the recording
  dump      write what was recorded so far to FILE without stopping: a JFR recording, or
            collapsed stacks when FILE ends in .txt or .collapsed
  status    the session's state, engine, sample and drop counts, recording
  --lib PATH      libctxprof.so (default: ../lib/ from ctxprof, or next to it; docs/TOOLS.md)
  --timeout S     seconds to wait for the JVM's attach listener (default 10)
Relative paths are taken from the current directory. A JVM in a container (another mount or
pid namespace) is reached through /proc/PID/root; OUT, FILE and the library are then paths
inside the container, and the library must exist there at the same path.
)help";

constexpr const char* kOtelHelp =
    R"help(usage: ctxprof otel PID

Reads the OpenTelemetry contexts that a process profiled with otelcontext=true publishes, the
way an OpenTelemetry profiler in the host reads them (OTEP 4719 and OTEP 4947; docs/TOOLS.md):
first the process context (the OTEL_CTX mapping: resource and attribute key map), then, for
each thread with a valid record, its id and name, trace id, span id and attribute values.
Each thread is stopped for the read (ptrace) and let go at once: run it as the process's user
(kernel.yama.ptrace_scope 0) or with CAP_SYS_PTRACE.
)help";

// Flags of the analysis commands, parsed the same way for each.
struct AnalysisArguments {
  std::vector<std::string> inputs;
  std::string output;
  std::string by;
  std::string to;
  std::string labels;
  bool labels_given = false;
  size_t top = 10;
  EventSelection events = EventSelection::kAll;
  std::vector<std::string> event_types;  // --events TYPE,... (kTypes)
  std::string value = "duration";        // --value FIELD
  bool value_given = false;
  bool quiet = false;
  bool threads = false;
  bool diff = false;
  bool latency = false;
  // --min-duration / --max-duration in nanoseconds; -1 = not given.
  int64_t min_duration = -1;
  int64_t max_duration = -1;
  std::string duration_text;  // e.g. ">= 50ms", for titles
};

// A duration with its unit: a decimal number then ns, us, ms, s or m ("250ms", "1.5s");
// false for anything else, or a value of 2^63 ns or more.
bool ParseDuration(const std::string& text, int64_t* nanos) {
  static const std::pair<const char*, double> kUnits[] = {
      {"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}};
  size_t digits = 0;
  while (digits < text.size() &&
         (isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.')) {
    digits++;
  }
  const std::string number = text.substr(0, digits);
  const std::string unit = text.substr(digits);
  if (number.empty() || number == "." || std::count(number.begin(), number.end(), '.') > 1) {
    return false;
  }
  for (const auto& [name, scale] : kUnits) {
    if (unit != name) continue;
    const double value = strtod(number.c_str(), nullptr) * scale;
    if (!(value < 9.2e18)) return false;
    *nanos = static_cast<int64_t>(value + 0.5);
    return true;
  }
  return false;
}

// Parses `args` (after the command); `allowed` lists the flags the command takes.
bool ParseAnalysisArguments(const std::string& command, const std::vector<std::string>& args,
                            const std::vector<std::string>& allowed, AnalysisArguments* out,
                            std::string* error) {
  for (size_t i = 0; i < args.size(); i++) {
    const std::string& arg = args[i];
    const bool known = std::find(allowed.begin(), allowed.end(), arg) != allowed.end();
    if (arg.size() > 1 && arg[0] == '-') {
      if (!known) {
        *error = command + ": unknown option \"" + arg + "\" (see ctxprof " + command + " --help)";
        return false;
      }
      if (arg == "--quiet" || arg == "--threads" || arg == "--diff" || arg == "--latency") {
        (arg == "--quiet"     ? out->quiet
         : arg == "--threads" ? out->threads
         : arg == "--diff"    ? out->diff
                              : out->latency) = true;
        continue;
      }
      if (i + 1 >= args.size()) {
        *error = command + ": " + arg + " needs a value";
        return false;
      }
      const std::string& value = args[++i];
      if (arg == "-o") {
        out->output = value;
      } else if (arg == "--by") {
        out->by = value;
      } else if (arg == "--to") {
        out->to = value;
      } else if (arg == "--labels") {
        out->labels = value;
        out->labels_given = true;
      } else if (arg == "--top") {
        char* end = nullptr;
        const long top = strtol(value.c_str(), &end, 10);
        if (value.empty() || *end != '\0' || top < 1 || top > 1000000) {
          *error = command + ": --top wants a number from 1 to 1000000, got \"" + value + "\"";
          return false;
        }
        out->top = static_cast<size_t>(top);
      } else if (arg == "--min-duration" || arg == "--max-duration") {
        int64_t* bound = arg == "--min-duration" ? &out->min_duration : &out->max_duration;
        out->duration_text = (arg == "--min-duration" ? ">= " : "<= ") + value;
        if (!ParseDuration(value, bound)) {
          *error = command + ": " + arg +
                   " wants a span length with its unit (ns, us, ms, s or m), e.g. 250ms or "
                   "1.5s; got \"" +
                   value + "\"";
          return false;
        }
      } else if (arg == "--value") {
        out->value = value;
        out->value_given = true;
      } else if (arg == "--events") {
        out->event_types.clear();
        if (value.find('.') != std::string::npos) {
          // Event type names, e.g. jdk.FileRead,jdk.SocketRead.
          out->events = EventSelection::kTypes;
          size_t start = 0;
          while (start <= value.size()) {
            const size_t comma = std::min(value.find(',', start), value.size());
            const std::string type = value.substr(start, comma - start);
            if (type.empty() || type.find('.') == std::string::npos) {
              *error = command + ": --events " + value + ": \"" + type +
                       "\" is not an event type name (a type is named like jdk.FileRead; give "
                       "types only, comma-separated)";
              return false;
            }
            out->event_types.push_back(type);
            start = comma + 1;
          }
        } else if (!ParseEventSelection(value, &out->events)) {
          *error = command +
                   ": --events wants cpu, wall, all, alloc, lock or event types (e.g. "
                   "jdk.FileRead,jdk.SocketRead), got \"" +
                   value + "\"";
          return false;
        }
      }
    } else {
      out->inputs.push_back(arg);
    }
  }
  if (out->min_duration >= 0 && out->max_duration >= 0 && out->min_duration > out->max_duration) {
    *error = command + ": --min-duration (" + std::to_string(out->min_duration) +
             " ns) is longer than --max-duration (" + std::to_string(out->max_duration) +
             " ns): no span can be both; swap them";
    return false;
  }
  const bool by_duration = out->min_duration >= 0 || out->max_duration >= 0;
  if (out->diff && by_duration && out->min_duration >= 0 && out->max_duration >= 0) {
    *error = command +
             ": --diff with a duration compares the spans it selects with the rest: give "
             "--min-duration or --max-duration, not both";
    return false;
  }
  if (out->diff && !by_duration && out->inputs.size() != 2) {
    *error = command + ": --diff wants two recordings, BEFORE AFTER (got " +
             std::to_string(out->inputs.size()) + ")";
    return false;
  }
  if (out->value_given && out->events != EventSelection::kTypes) {
    *error = command + ": --value FIELD weighs events of --events TYPE,... (e.g. --events " +
             "jdk.FileRead --value bytesRead); cpu, wall, alloc and lock have their own weights";
    return false;
  }
  if (out->inputs.empty()) {
    *error = command + ": no recording to read (see ctxprof " + command + " --help)";
    return false;
  }
  return true;
}

// The spans --min-duration and --max-duration select (inactive when neither is given).
SpanFilter SelectedSpans(const AnalysisArguments& arguments) {
  SpanFilter filter;
  filter.active = arguments.min_duration >= 0 || arguments.max_duration >= 0;
  if (arguments.min_duration >= 0) filter.min_nanos = arguments.min_duration;
  if (arguments.max_duration >= 0) filter.max_nanos = arguments.max_duration;
  return filter;
}

// The other spans: shorter than --min-duration, or longer than --max-duration (one of them).
SpanFilter OtherSpans(const AnalysisArguments& arguments) {
  SpanFilter filter;
  filter.active = true;
  if (arguments.min_duration >= 0) {
    filter.max_nanos = arguments.min_duration - 1;
  } else {
    filter.min_nanos = arguments.max_duration + 1;
  }
  return filter;
}

// Reads `inputs` (files, repository folders, recordings being written) into one profile,
// keeping the events of the spans `spans` selects.
bool LoadProfile(const AnalysisArguments& arguments, const std::vector<std::string>& inputs,
                 const SpanFilter& spans, Profile* profile) {
  profile->set_span_filter(spans);
  profile->set_event_types(arguments.event_types, arguments.value);
  std::vector<std::string> files, notes;
  std::string error;
  const bool expanded = ExpandInputs(inputs, &files, &notes, &error);
  for (const std::string& note : notes) fprintf(stderr, "ctxprof: note: %s\n", note.c_str());
  if (!expanded) {
    fprintf(stderr, "ctxprof: %s\n", error.c_str());
    return false;
  }
  for (const std::string& file : files) {
    struct stat info;
    if (!arguments.quiet && stat(file.c_str(), &info) == 0) {
      fprintf(stderr, "reading %s: %.1f MiB\n", file.c_str(),
              static_cast<double>(info.st_size) / (1 << 20));
    }
    if (!profile->Load(file, arguments.events, &error)) {
      fprintf(stderr, "ctxprof: %s\n", error.c_str());
      return false;
    }
  }
  for (const Profile::EventType& type : profile->event_types()) {
    if (type.seen) continue;
    std::string known;
    for (const std::string& name : profile->types_with_stacks()) known += " " + name;
    fprintf(stderr,
            "ctxprof: --events %s: no such events in the recording (its events with a stack "
            "trace:%s)\n",
            type.name.c_str(), known.empty() ? " none" : known.c_str());
    return false;
  }
  // Said even with --quiet: they qualify the result.
  for (const std::string& note : profile->Notes()) {
    fprintf(stderr, "ctxprof: note: %s\n", note.c_str());
  }
  if (!arguments.quiet) {
    fprintf(stderr, "%zu file%s: %zu chunks, %zu samples, %zu contexts, %zu stacks\n", files.size(),
            files.size() == 1 ? "" : "s", profile->chunk_count(), profile->samples().size(),
            profile->contexts().size(), profile->stacks().size());
  }
  return true;
}

// --by, or "endpoint", or the first attribute; -1 when the recording has none.
bool ChooseAttribute(const Profile& profile, const std::string& by, int* attribute) {
  if (!by.empty()) {
    *attribute = profile.AttributeIndex(by);
    if (*attribute < 0) {
      std::string names;
      for (const std::string& name : profile.attribute_names()) names += " " + name;
      fprintf(stderr, "ctxprof: --by %s: the recording has no such attribute (it has:%s)\n",
              by.c_str(), names.empty() ? " none" : names.c_str());
      return false;
    }
    return true;
  }
  *attribute = profile.AttributeIndex("endpoint");
  if (*attribute < 0 && !profile.attribute_names().empty()) *attribute = 0;
  return true;
}

bool WriteOutput(const std::string& path, const std::string& bytes, bool quiet) {
  if (path == "-") {
    return fwrite(bytes.data(), 1, bytes.size(), stdout) == bytes.size() && fflush(stdout) == 0;
  }
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  file.close();
  if (!file) {
    fprintf(stderr, "ctxprof: cannot write %s: %s\n", path.c_str(), strerror(errno));
    return false;
  }
  if (!quiet) fprintf(stderr, "wrote %s: %zu bytes\n", path.c_str(), bytes.size());
  return true;
}

bool WantsHelp(const std::vector<std::string>& args) {
  for (const std::string& arg : args) {
    if (arg == "--") return false;
    if (arg == "--help" || arg == "-h") return true;
  }
  return false;
}

int Usage(const std::string& error) {
  fprintf(stderr, "ctxprof: %s\n", error.c_str());
  return kUsage;
}

int Report(const std::vector<std::string>& args, const std::string& /*executable*/) {
  AnalysisArguments arguments;
  std::string error;
  if (!ParseAnalysisArguments("report", args,
                              {"--by", "--threads", "--top", "--events", "--value", "--quiet",
                               "--latency", "--min-duration", "--max-duration"},
                              &arguments, &error)) {
    return Usage(error);
  }
  if (arguments.threads && !arguments.by.empty()) {
    return Usage("report: --by and --threads each choose the sections; give one of them");
  }
  const bool by_duration = arguments.min_duration >= 0 || arguments.max_duration >= 0;
  if (arguments.latency &&
      (arguments.threads || by_duration || arguments.events != EventSelection::kAll)) {
    return Usage(
        "report: --latency counts every span and the CPU samples per --by value; it takes no "
        "--threads, --events, --min-duration or --max-duration");
  }
  if (arguments.latency) arguments.events = EventSelection::kCpu;
  Profile profile;
  ReportOptions options;
  options.top = arguments.top;
  options.by_thread = arguments.threads;
  if (!LoadProfile(arguments, arguments.inputs, SelectedSpans(arguments), &profile)) {
    return kBadInput;
  }
  if (!ChooseAttribute(profile, arguments.by, &options.attribute)) return kUsage;
  std::string text;
  if (arguments.latency) {
    if (!profile.has_latencies()) {
      fprintf(stderr,
              "ctxprof: report --latency: the recording has no ctxprof.SpanLatency events (a "
              "ctxprof recording of threads with timed spans has them; spans are untimed with "
              "-Dctxprof.spanTiming=false)\n");
      return kBadInput;
    }
    WriteLatencyReport(profile, options.attribute, &text);
  } else {
    WriteReport(profile, options, &text);
  }
  return WriteOutput("-", text, true) ? kOk : kBadInput;
}

int Flame(const std::vector<std::string>& args, const std::string& /*executable*/) {
  AnalysisArguments arguments;
  std::string error;
  if (!ParseAnalysisArguments("flame", args,
                              {"-o", "--by", "--diff", "--events", "--value", "--quiet",
                               "--min-duration", "--max-duration"},
                              &arguments, &error)) {
    return Usage(error);
  }
  if (arguments.output.empty()) return Usage("flame: -o FLAME.html is required");
  // With --diff, BEFORE and AFTER: two recordings, or with a duration the other spans and the
  // selected ones of every input; otherwise every input in one profile.
  const bool by_duration = arguments.min_duration >= 0 || arguments.max_duration >= 0;
  std::vector<Profile> profiles(arguments.diff ? 2 : 1);
  for (size_t i = 0; i < profiles.size(); i++) {
    const bool one_each = arguments.diff && !by_duration;
    const std::vector<std::string> inputs =
        one_each ? std::vector<std::string>{arguments.inputs[i]} : arguments.inputs;
    const SpanFilter spans =
        arguments.diff && by_duration && i == 0 ? OtherSpans(arguments) : SelectedSpans(arguments);
    if (!LoadProfile(arguments, inputs, spans, &profiles[i])) return kBadInput;
  }
  // The attribute is chosen in the last (AFTER) recording, or in BEFORE when AFTER lacks it.
  int attribute = -1;
  const Profile* named = &profiles.back();
  if (arguments.diff && !arguments.by.empty() && named->AttributeIndex(arguments.by) < 0) {
    named = &profiles.front();
  }
  if (!ChooseAttribute(*named, arguments.by, &attribute)) return kUsage;
  const std::string by = attribute < 0 ? "" : named->attribute_names()[attribute];
  std::string page;
  if (arguments.diff) {
    std::string title;
    if (by_duration) {
      title = "ctxprof: spans " + arguments.duration_text + " against the rest:";
      for (const std::string& input : arguments.inputs) title += " " + input;
    } else {
      title = "ctxprof: " + arguments.inputs[0] + " -> " + arguments.inputs[1];
    }
    WriteDiffFlameGraph(profiles[0], profiles[1], by, title, &page);
  } else {
    std::string title = "ctxprof:";
    for (const std::string& input : arguments.inputs) title += " " + input;
    WriteFlameGraph(profiles[0], by, title, &page);
  }
  return WriteOutput(arguments.output, page, arguments.quiet) ? kOk : kBadInput;
}

int Convert(const std::vector<std::string>& args, const std::string& /*executable*/) {
  AnalysisArguments arguments;
  std::string error;
  if (!ParseAnalysisArguments("convert", args,
                              {"--to", "-o", "--events", "--value", "--labels", "--quiet",
                               "--min-duration", "--max-duration"},
                              &arguments, &error)) {
    return Usage(error);
  }
  if (arguments.to != "collapsed" && arguments.to != "pprof" && arguments.to != "otlp") {
    return Usage("convert: --to wants collapsed, pprof or otlp" +
                 (arguments.to.empty() ? std::string() : ", got \"" + arguments.to + "\""));
  }
  if (arguments.to == "collapsed" && arguments.labels_given) {
    return Usage("convert: --labels applies to --to pprof and --to otlp");
  }
  if (arguments.output.empty()) return Usage("convert: -o OUT is required (\"-\" = stdout)");
  Profile profile;
  if (!LoadProfile(arguments, arguments.inputs, SelectedSpans(arguments), &profile)) {
    return kBadInput;
  }
  std::vector<LabelSource> labels = DefaultLabels(profile);
  if (arguments.to == "otlp") labels.erase(labels.begin());  // one profile per kind already
  if (arguments.labels_given && !ParseLabels(arguments.labels, profile, &labels, &error)) {
    return Usage("convert: " + error);
  }
  std::string bytes;
  if (arguments.to == "collapsed") {
    WriteCollapsed(profile, &bytes);
  } else if (arguments.to == "otlp") {
    bytes = EncodeOtlp(profile, labels);
  } else {
    StatusOr<std::string> gzipped = Gzip(EncodePprof(profile, labels), /*level=*/9);
    if (!gzipped.ok()) {
      fprintf(stderr, "ctxprof: %s\n", gzipped.status().message().c_str());
      return kBadInput;
    }
    bytes = std::move(gzipped.value());
  }
  return WriteOutput(arguments.output, bytes, arguments.quiet) ? kOk : kBadInput;
}

int Record(const std::vector<std::string>& args, const std::string& executable) {
  RecordOptions options;
  std::string error, agent_options, library;
  std::vector<std::string> command;
  if (!ParseRecordArguments(args, &options, &error) ||
      !AgentOptionString("record", options, &agent_options, &error) ||
      !CheckAgentOptions("record", agent_options, &error)) {
    return Usage(error);
  }
  if (!FindAgentLibrary("record", options.library, executable, &library, &error)) {
    fprintf(stderr, "ctxprof: %s\n", error.c_str());
    return kBadInput;
  }
  if (!JvmCommand(options, library, agent_options, &command, &error)) return Usage(error);
  const std::string repository = RepositoryOf(options);
  fprintf(stderr, "ctxprof: recording to %s\n",
          (repository.empty() ? options.output : repository + "/").c_str());
  const FileState before = StateOf(options.output);
  const int status = RunCommand(command, &error);
  if (!error.empty()) fprintf(stderr, "ctxprof: %s\n", error.c_str());
  // A repository's chunk files are named by the agent; the check covers the -o file only.
  if (status == 0 && repository.empty() && !RecordingWritten(before, StateOf(options.output))) {
    fprintf(stderr,
            "ctxprof: record: the agent wrote no recording to %s: it did not start a session "
            "(its message is above)\n",
            options.output.c_str());
    return kBadInput;
  }
  return status;
}

int Attach(const std::vector<std::string>& args, const std::string& executable) {
  AttachArguments arguments;
  std::string error;
  if (!ParseAttachArguments(args, &arguments, &error)) return Usage(error);
  return RunAttach(arguments, executable);
}

// Whatever /proc/PID/task/TID/comm says ("" when the thread is gone).
std::string ThreadName(pid_t pid, pid_t tid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

int Otel(const std::vector<std::string>& args, const std::string& /*executable*/) {
  if (args.size() != 1) return Usage("otel: wants one process id: ctxprof otel PID");
  char* end = nullptr;
  const long number = strtol(args[0].c_str(), &end, 10);
  if (args[0].empty() || *end != '\0' || number <= 0 || number > INT_MAX) {
    return Usage("otel: \"" + args[0] + "\" is not a process id");
  }
  const pid_t pid = static_cast<pid_t>(number);
  const StatusOr<ProcessContextView> process = ReadProcessContext(pid);
  if (!process.ok()) {
    fprintf(stderr, "ctxprof: otel: %s\n", process.status().message().c_str());
    return kBadInput;
  }
  const StatusOr<TlsSlot> slot = FindThreadContextSlot(pid);
  if (!slot.ok()) {
    fprintf(stderr, "ctxprof: otel: %s\n", slot.status().message().c_str());
    return kBadInput;
  }
  std::string resource;
  for (const auto& [key, value] : process.value().resource) {
    resource += (resource.empty() ? "" : ", ") + key + "=" + value;
  }
  printf("process %d (OTEL_CTX): %s\n", pid, resource.c_str());
  std::vector<std::string> keys;
  for (const auto& [key, values] : process.value().attributes) {
    std::string joined;
    for (const std::string& value : values) joined += (joined.empty() ? "" : ", ") + value;
    printf("  %s: %s\n", key.c_str(), joined.c_str());
    if (key == "threadlocal.attribute_key_map") keys = values;
  }
  const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
  DIR* folder = opendir(tasks.c_str());
  if (folder == nullptr) {
    fprintf(stderr, "ctxprof: otel: cannot list %s: %s\n", tasks.c_str(), strerror(errno));
    return kBadInput;
  }
  std::vector<pid_t> tids;
  while (const dirent* entry = readdir(folder)) {
    const long tid = strtol(entry->d_name, &end, 10);
    if (*end == '\0' && tid > 0) tids.push_back(static_cast<pid_t>(tid));
  }
  closedir(folder);
  std::sort(tids.begin(), tids.end());
  size_t with_record = 0;
  for (const pid_t tid : tids) {
    const StatusOr<ThreadView> thread = ReadThreadContext(pid, tid, slot.value());
    if (!thread.ok() && thread.status().os_error() == ESRCH) continue;  // exited meanwhile
    if (!thread.ok()) {
      fprintf(stderr, "ctxprof: otel: %s\n", thread.status().message().c_str());
      return kBadInput;
    }
    if (!thread.value().present) continue;
    with_record++;
    std::string attributes;
    for (const auto& [index, value] : thread.value().attributes) {
      const std::string key = static_cast<size_t>(index) < keys.size()
                                  ? keys[static_cast<size_t>(index)]
                                  : "key#" + std::to_string(index);
      attributes += " " + key + "=" + value;
    }
    printf("thread %d (%s): trace %s span %s%s\n", tid, ThreadName(pid, tid).c_str(),
           thread.value().trace.c_str(), thread.value().span.c_str(), attributes.c_str());
  }
  printf("%zu threads, %zu with a context record (OTEP 4947)\n", tids.size(), with_record);
  return kOk;
}

// One command of the tool. An entry here is all a new command needs: `ctxprof --help` lists
// it, `ctxprof NAME --help` prints `help` (then the agent's options when `agent_options`), and
// `ctxprof NAME ...` calls `run` with the arguments after NAME and the path ctxprof was started
// as (to find libctxprof.so).
struct Command {
  const char* name;
  const char* summary;  // its line in `ctxprof --help`
  const char* help;
  bool agent_options;
  int (*run)(const std::vector<std::string>& args, const std::string& executable);
};

constexpr Command kCommands[] = {
    {"report", "hottest methods per context attribute value (or per thread), as text", kReportHelp,
     false, Report},
    {"flame", "a self-contained HTML flame graph with a selector per attribute value; --diff",
     kFlameHelp, false, Flame},
    {"convert", "collapsed stacks, gzipped pprof or OTLP profiles", kConvertHelp, false, Convert},
    {"record", "run a JVM with the ctxprof agent and write a JFR recording", kRecordHelp, true,
     Record},
    {"attach", "start, stop, dump or ask the status of profiling in a running JVM", kAttachHelp,
     true, Attach},
    {"otel", "the OpenTelemetry contexts a process publishes (OTEP 4719, 4947), per thread",
     kOtelHelp, false, Otel},
};

std::string MainHelp() {
  size_t width = 0;
  for (const Command& command : kCommands) width = std::max(width, strlen(command.name));
  std::string help = kMainUsage;
  for (const Command& command : kCommands) {
    help += "  " + std::string(command.name) + std::string(width + 2 - strlen(command.name), ' ') +
            command.summary + "\n";
  }
  return help + kMainNotes;
}

// The agent's option table (profiler/options.h), as `record --help` and `attach --help` end.
std::string AgentOptionsHelp() {
  const std::vector<ctxprof::OptionHelp>& table = ctxprof::OptionTable();
  size_t width = 0;
  for (const ctxprof::OptionHelp& option : table) {
    width = std::max(width, strlen(option.key) + 1 + strlen(option.default_value));
  }
  std::string help =
      "\nAgent options (--option KEY=VALUE; KEY=DEFAULT, or KEY alone when unset by default;\n"
      "docs/SAMPLER.md, \"Options\"):\n";
  for (const ctxprof::OptionHelp& option : table) {
    std::string entry = option.key;
    if (option.default_value[0] != '\0') entry += "=" + std::string(option.default_value);
    help += "  " + entry + std::string(width + 2 - entry.size(), ' ') + option.summary + "\n";
  }
  return help;
}

const Command* FindCommand(const std::string& name) {
  for (const Command& command : kCommands) {
    if (name == command.name) return &command;
  }
  return nullptr;
}

std::string CommandNames() {
  std::string names;
  for (const Command& command : kCommands) {
    names += (names.empty() ? "" : ", ") + std::string(command.name);
  }
  return names;
}

}  // namespace
}  // namespace ctxprof::tools

int main(int argc, char** argv) {
  using namespace ctxprof::tools;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    fputs(MainHelp().c_str(), stderr);
    return kUsage;
  }
  const std::string name = args[0];
  args.erase(args.begin());
  if (name == "--help" || name == "-h" || name == "help") {
    fputs(MainHelp().c_str(), stdout);
    return kOk;
  }
  if (name == "--version" || name == "version") {
    printf("ctxprof %s\n", ctxprof::kCtxprofVersion);
    return kOk;
  }
  const Command* command = FindCommand(name);
  if (command == nullptr) {
    return Usage("unknown command \"" + name + "\" (commands: " + CommandNames() +
                 "; see ctxprof --help)");
  }
  if (WantsHelp(args)) {
    fputs(command->help, stdout);
    if (command->agent_options) fputs(AgentOptionsHelp().c_str(), stdout);
    return kOk;
  }
  return command->run(args, argv[0]);
}
