// Profile: the samples of a JFR recording, with stacks and contexts resolved, for the ctxprof
// command-line tool (report, flame, convert) and the OTLP exporter (otlp=, otlp_exporter.h).
//
// A sample is one jdk.ExecutionSample / ctxprof.CpuSample event (kind cpu), or one
// profiler.WallClockSample event (kind wall; also async-profiler's, and ctxprof.WallClockSample
// of recordings before it), or in a ctxprof recording (one with ctxprof.ProfilerSettings) a
// jdk.NativeMethodSample (wallsamples=jdk); its weight is the event's `samples` or `weight`
// field, else 1. With --events alloc / lock a sample is one jdk.ObjectAllocationSample (kind
// alloc, weight = its bytes) / jdk.JavaMonitorEnter or jdk.ThreadPark (kind monitor or park,
// weight = its duration in nanoseconds), whoever wrote them (ctxprof or the JDK). Its context is
// the ctxprof.Context interval of the same thread (osThreadId) whose [startTime, startTime +
// duration) contains the sample's startTime, found with JfrReader::ContextAt (per-thread
// intervals sorted by start, binary search); a sample no interval covers has no context. Other
// event types (e.g. the JDK's own jdk.NativeMethodSample) are ignored. An allocation or lock
// event's stack gets one more leaf frame: the allocated object's class, the monitor's class or
// the park blocker's class (type "Class", Java name such as "byte[]"), so reports and graphs say
// what was allocated or waited for.
//
// With --events TYPE (EventSelection::kTypes) a sample is any event of those types, weighing its
// numeric field --value (set_event_types), joined at its start. Every sample knows the length of
// the span its context is (span_nanos: the abutting Context parts joined, JfrReader::ContextAt),
// which set_span_filter selects on (--min-duration, --max-duration); ctxprof.SpanLatency
// histograms add up per attribute value (LatencyBy).
//
// Frames, stacks and contexts are interned: equal values share one index, so grouping by stack
// or context is an integer comparison.
//
// Several recordings (the chunk files of a repository, or files named one by one) are loaded
// into one Profile by calling Load once per file: samples add up, and a sample joins only the
// contexts of its own file. Load reads a recording that is being written: an unfinished chunk
// (a repository's chunk in progress) up to its last flush, a chunk header caught in the middle of
// an update again a moment later (up to ~1 s, like the JDK's readers), and says so in notes().
//
// Thread safety: immutable after the last Load().
#ifndef CTXPROF_PROFILER_EXPORT_PROFILE_H_
#define CTXPROF_PROFILER_EXPORT_PROFILE_H_

#include <climits>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "profiler/base/event_kind.h"
#include "profiler/base/latency_histogram.h"
#include "profiler/base/status.h"

namespace ctxprof {

class JfrReader;
struct JfrEvent;

// Which events to load: CPU samples, wall samples, both ("all"), allocations or lock waits
// (contended monitor enters and parks); kEvery: every kind at once (the OTLP exporter, which
// writes one profile per kind; the weights then mix units, so total_weight() means nothing).
// kTypes: the event types given to Profile::set_event_types (`--events TYPE,...`).
enum class EventSelection : uint8_t { kCpu, kWall, kAll, kAlloc, kLock, kEvery, kTypes };

// Parses "cpu", "wall", "all", "alloc" or "lock"; false for anything else.
bool ParseEventSelection(const std::string& text, EventSelection* out);

// What Sample::weight counts for the samples a selection loads.
// kNumber: a plain number (`--value` of a field that is neither a time span nor a data amount).
enum class WeightUnit : uint8_t { kSamples, kBytes, kNanoseconds, kNumber };
WeightUnit UnitOf(EventSelection selection);

struct Frame {
  std::string class_name;  // Java: '.'-separated ("com.example.Handler"); native: the library
  // Native: the whole symbol ("PhaseChaitin::gather_lrg_masks(bool)"), rejoined from how the
  // recording splits it (profiler/jfr/native_method.h).
  std::string method_name;
  std::string descriptor;  // Java: "(I)V"; native: "" (a native symbol has none of its own)
  int32_t line = 0;
  std::string type;  // "Interpreted", "JIT compiled", "Inlined", "Native", ...

  bool IsJava() const {
    return type == "Interpreted" || type == "JIT compiled" || type == "Inlined" ||
           type == "C1 compiled";
  }

  // "class.method": the name reports and graphs show (overloads are merged); a class frame
  // (no method) is the class name alone.
  std::string Name() const {
    return method_name.empty() ? class_name : class_name + "." + method_name;
  }
};

struct Context {
  std::string trace_id;  // 32 hex digits, "" when unset
  std::string span_id;   // 16 hex digits, "" when unset
  // Parallel to Profile::attribute_names(); "" = unset.
  std::vector<std::string> values;
};

// What outputs carry as one sample type (pprof) or one profile (OTLP): the samples of a kind
// (named after it, in MeasureUnit(kind)), or of one event type of --events TYPE (named after
// the type, in its value's unit: "nanoseconds", "bytes" or "count").
struct Measure {
  SampleKind kind;
  int32_t event_type;  // kEvent: index into Profile::event_types(); else -1
  std::string name;
  std::string unit;

  bool Holds(const struct Sample& sample) const;
};

// A thread as samples name it: its OS id and its Java name (else OS name).
struct Thread {
  int64_t os_thread_id = 0;
  std::string name;
};

struct Sample {
  int64_t thread_id = 0;    // OS thread id
  uint32_t thread = 0;      // index into Profile::threads()
  int64_t ticks = 0;        // startTime in the recording's ticks
  int64_t epoch_nanos = 0;  // startTime in nanoseconds since the epoch (the JDK's conversion)
  SampleKind kind = SampleKind::kCpu;
  // Sampling intervals this sample stands for (1 for jdk.ExecutionSample); bytes for
  // allocations, nanoseconds for lock waits (Profile::unit()).
  int64_t weight = 1;
  uint32_t stack = 0;       // index into Profile::stacks()
  int32_t context = -1;     // index into Profile::contexts(), -1 = no context
  int32_t event_type = -1;  // kind kEvent: index into Profile::event_types()
  // The length of the span its context is (JfrReader::ContextAt), -1 = no context.
  int64_t span_nanos = -1;
};

// Which samples to keep by the length of their span (--min-duration, --max-duration): those in
// a span at least min_nanos and at most max_nanos long. Inactive: every sample.
struct SpanFilter {
  bool active = false;
  int64_t min_nanos = 0;
  int64_t max_nanos = INT64_MAX;
};

class Profile {
 public:
  // Reads `path` and adds the samples `selection` asks for. The whole file is parsed in memory
  // (JfrReader), then only the interned model is kept. On failure returns false and *error
  // names the file and, for bad content, the offset (JfrReader's message); the samples of
  // earlier files stay.
  bool Load(const std::string& path, EventSelection selection, std::string* error);
  // For EventSelection::kTypes: load the events of these types (the JDK's or the application's;
  // those without a stackTrace field have an empty stack), each weighing its numeric field
  // `value_field` (a time span in nanoseconds, a data amount in bytes, else the number), joined
  // to the context open on its thread at its start time. Call before the first Load.
  void set_event_types(const std::vector<std::string>& types, const std::string& value_field);
  // The loaded event types, in the order given: name, and unit of its value field
  // (kNumber until a file declared the type).
  struct EventType {
    std::string name;
    WeightUnit unit = WeightUnit::kNumber;
    bool seen = false;  // a loaded file declares it
  };
  const std::vector<EventType>& event_types() const { return event_types_; }
  const std::string& value_field() const { return value_field_; }
  // For kTypes: the event types with a stackTrace field in the loaded files, for a message
  // when a type asked for is not there.
  const std::set<std::string>& types_with_stacks() const { return types_with_stacks_; }
  // Keeps only the samples the filter admits from the next Load on.
  void set_span_filter(const SpanFilter& filter) { span_filter_ = filter; }
  // Load for a recording already in memory (a finished chunk file the exporter read); `name`
  // stands for its path in messages.
  bool LoadBytes(const std::string& name, std::vector<uint8_t> bytes, EventSelection selection,
                 std::string* error);
  // What qualifies the result, for stderr: what the last loaded file says about being incomplete
  // (an unfinished chunk read up to its last flush, or a last chunk without the final flag: the
  // writer had not finished the recording; load files oldest first: earlier chunk files of a
  // repository are finished but never final), and the samples and closed spans the recording
  // counted as dropped, which no sample, span count or latency percentile includes.
  std::vector<std::string> Notes() const;

  const std::vector<Frame>& frames() const { return frames_; }
  // Each stack lists frame indices leaf first (as JFR stores them); may be empty.
  const std::vector<std::vector<uint32_t>>& stacks() const { return stacks_; }
  const std::vector<Context>& contexts() const { return contexts_; }
  const std::vector<Sample>& samples() const { return samples_; }
  // Distinct (OS thread id, name) pairs of the samples.
  const std::vector<Thread>& threads() const { return threads_; }
  // Attribute names as registered (from ctxprof.ProfilerSettings; else the JFR field names),
  // in the ctxprof.Context field order.
  const std::vector<std::string>& attribute_names() const { return attribute_names_; }
  // Index of `name` in attribute_names(), also accepting the JFR field name ("http_route" for
  // "http.route"); -1 when absent.
  int AttributeIndex(const std::string& name) const;
  // The CPU sampling interval from ctxprof.ProfilerSettings, 0 when the recording has none.
  int64_t cpu_interval_nanos() const { return cpu_interval_nanos_; }
  // The wall sampling interval (jdk.ActiveSetting `wall`), 0 when the recording has none.
  int64_t wall_interval_nanos() const { return wall_interval_nanos_; }
  // The allocation sampling interval in bytes (ctxprof.ProfilerSettings `allocInterval`, else
  // jdk.ActiveSetting `alloc`), 0 when the recording has none.
  int64_t alloc_interval_bytes() const { return alloc_interval_bytes_; }
  // The kind's sampling interval in MeasureUnit(kind): the CPU or wall interval, the
  // allocation sampling interval; 0 = unknown, and always for monitor and park (lock= is a
  // threshold, not an interval).
  int64_t period(SampleKind kind) const;
  // How many samples or events `sample` stands for: its weight for cpu and wall
  // (IsSample), else 1.
  static int64_t CountOf(const Sample& sample);
  // `sample`'s amount in MeasureUnit(sample.kind): a cpu or wall sample's weight x period (0
  // when the period is unknown), an event's weight (its bytes or nanoseconds).
  int64_t MeasureOf(const Sample& sample) const;
  // The recording's time range from its chunk headers (epoch nanoseconds), 0 when empty.
  int64_t start_nanos() const { return start_nanos_; }
  int64_t duration_nanos() const { return duration_nanos_; }
  size_t chunk_count() const { return chunk_count_; }
  // Total sample weight, in unit().
  int64_t total_weight() const { return total_weight_; }
  WeightUnit unit() const { return unit_; }

  // The measures of the loaded samples, in output order: the kinds (kSampleKinds), then the
  // event types of set_event_types.
  std::vector<Measure> Measures() const;

  // The value of attribute `attribute` in `sample`'s context; "" when unset or no context.
  const std::string& ValueOf(const Sample& sample, int attribute) const;

  // The ctxprof.SpanLatency histograms of every loaded file (all closed spans, written as a
  // ctxprof.Context or not), added up per value of attribute `attribute` ("" = unset).
  std::map<std::string, LatencyHistogram> LatencyBy(int attribute) const;
  // Whether any loaded file had ctxprof.SpanLatency events (a ctxprof recording with timed
  // spans).
  bool has_latencies() const { return !latencies_.empty(); }

 private:
  std::vector<Frame> frames_;
  std::vector<std::vector<uint32_t>> stacks_;
  std::vector<Context> contexts_;
  std::vector<Sample> samples_;
  std::vector<Thread> threads_;
  std::vector<std::string> attribute_names_;
  std::vector<std::string> attribute_fields_;  // JFR field names, parallel to attribute_names_
  int64_t cpu_interval_nanos_ = 0;
  int64_t wall_interval_nanos_ = 0;
  int64_t alloc_interval_bytes_ = 0;
  int64_t start_nanos_ = 0;
  int64_t duration_nanos_ = 0;
  size_t chunk_count_ = 0;
  int64_t total_weight_ = 0;
  std::string unfinished_;  // about the last loaded file; "" when it is finished
  // The largest droppedSamples and droppedSpans of the files' ctxprof.ProfilerCounters: totals
  // since a recording's start, so the chunk files of one recording are not added up.
  int64_t dropped_samples_ = 0;
  int64_t dropped_spans_ = 0;
  // Adds the samples of `reader`, read from `path`; false with *error when a type of
  // set_event_types has no numeric field `value_field`.
  bool Add(const JfrReader& reader, const std::string& path, EventSelection selection,
           std::string* error);
  // For kTypes: the index in event_types_ of `event`'s type (-1 when not asked for) and of its
  // value field, whose unit it notes; fails when the type has no such numeric field.
  Status ValueSourceOf(const JfrEvent& event, int32_t* event_type, int* field);

  // Interning across files.
  std::unordered_map<std::string, uint32_t> frame_index_;
  std::map<std::vector<uint32_t>, uint32_t> stack_index_;
  std::map<std::vector<std::string>, int32_t> context_index_;  // trace, span, values...
  WeightUnit unit_ = WeightUnit::kSamples;
  SpanFilter span_filter_;
  std::vector<EventType> event_types_;
  std::set<std::string> types_with_stacks_;
  std::string value_field_;
  // ctxprof.SpanLatency histograms by attribute values (parallel to attribute_names_ when the
  // file was loaded; shorter when a later file added attributes).
  std::map<std::vector<std::string>, LatencyHistogram> latencies_;
};

// A JVM class name as JFR stores it ("java/lang/String", "[B", "[Ljava/lang/String;") in Java
// notation ("java.lang.String", "byte[]", "java.lang.String[]").
std::string JavaClassName(const std::string& jvm_name);

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_EXPORT_PROFILE_H_
