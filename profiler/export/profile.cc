#include "profiler/export/profile.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <unordered_map>

#include "profiler/jfr/jfr_metadata.h"
#include "profiler/jfr/jfr_reader.h"
#include "profiler/jfr/native_method.h"

namespace ctxprof {

namespace {

// ctxprof.Context and ctxprof.SpanLatency fields that are not attributes.
bool IsFixedContextField(const std::string& name) {
  return name == "startTime" || name == "duration" || name == "eventThread" ||
         name == "stackTrace" || name == "contextId" || name == "traceIdHigh" ||
         name == "traceIdLow" || name == "spanId" || name == "traceId" || name == "spans" ||
         name == "totalDuration" || name == "maxDuration" || name == "bucketDeltas" ||
         name == "buckets";
}

std::vector<std::string> SplitCommas(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= text.size() && !text.empty()) {
    const size_t comma = text.find(',', start);
    const size_t end = comma == std::string::npos ? text.size() : comma;
    parts.push_back(text.substr(start, end - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return parts;
}

std::string DottedClassName(std::string name) {
  for (char& c : name) {
    if (c == '/') c = '.';
  }
  return name;
}

// The kind of events of `type`; false for a type the tool does not read. jdk.NativeMethodSample
// is a wall sample only in a ctxprof recording (wallsamples=jdk); the JDK's own are not. Likewise
// jdk.ObjectAllocationInNewTLAB is an allocation sample only in a ctxprof upload: the JDK's own
// are TLAB refills that its jdk.ObjectAllocationSample events count already.
bool KindOf(const std::string& type, bool ctxprof_recording, SampleKind* kind) {
  if (type == "jdk.ExecutionSample" || type == "ctxprof.CpuSample") {
    *kind = SampleKind::kCpu;
  } else if (type == "profiler.WallClockSample" || type == "ctxprof.WallClockSample" ||
             (type == "jdk.NativeMethodSample" && ctxprof_recording)) {
    *kind = SampleKind::kWall;
  } else if (type == "jdk.ObjectAllocationSample" ||
             (type == "jdk.ObjectAllocationInNewTLAB" && ctxprof_recording)) {
    *kind = SampleKind::kAllocation;
  } else if (type == "jdk.JavaMonitorEnter") {
    *kind = SampleKind::kMonitorEnter;
  } else if (type == "jdk.ThreadPark") {
    *kind = SampleKind::kThreadPark;
  } else {
    return false;
  }
  return true;
}

// The bytes an allocation event stands for: jdk.ObjectAllocationSample's weight, or the tlabSize
// of a ctxprof upload's jdk.ObjectAllocationInNewTLAB (docs/JFR.md, "Pyroscope").
int64_t AllocatedBytes(const JfrEvent& event) {
  return event.Field(event.type_name() == "jdk.ObjectAllocationSample" ? "weight" : "tlabSize")
      .integer();
}

// Whether samples of `kind` are loaded for `selection`.
bool Selects(EventSelection selection, SampleKind kind) {
  switch (selection) {
    case EventSelection::kCpu:
      return kind == SampleKind::kCpu;
    case EventSelection::kWall:
      return kind == SampleKind::kWall;
    case EventSelection::kAll:
      return IsSample(kind);
    case EventSelection::kAlloc:
      return kind == SampleKind::kAllocation;
    case EventSelection::kLock:
      return kind == SampleKind::kMonitorEnter || kind == SampleKind::kThreadPark;
    case EventSelection::kEvery:
      return true;
    case EventSelection::kTypes:
      return kind == SampleKind::kEvent;
  }
  return false;
}

// A numeric field's value in nanoseconds (a @Timespan), bytes (a @DataAmount) or as it is;
// negative values (the JDK's "none", Long.MIN_VALUE) count 0.
int64_t ValueInUnit(const JfrReader& reader, const JfrField& field, const JfrValue& value) {
  int64_t number =
      value.kind() == JfrValue::Kind::kFloat ? std::llround(value.floating()) : value.integer();
  if (number < 0) return 0;
  if (field.timespan == "TICKS") return reader.NanosOf(number);
  const std::pair<const char*, int64_t> kScales[] = {
      {"MICROSECONDS", 1000}, {"MILLISECONDS", 1000000}, {"SECONDS", 1000000000}};
  for (const auto& [unit, scale] : kScales) {
    if (field.timespan == unit) {
      return number > INT64_MAX / scale ? INT64_MAX : number * scale;
    }
  }
  if (field.data_amount == "BITS") return number / 8;
  return number;
}

}  // namespace

bool ParseEventSelection(const std::string& text, EventSelection* out) {
  if (text == "cpu") {
    *out = EventSelection::kCpu;
  } else if (text == "wall") {
    *out = EventSelection::kWall;
  } else if (text == "all") {
    *out = EventSelection::kAll;
  } else if (text == "alloc") {
    *out = EventSelection::kAlloc;
  } else if (text == "lock") {
    *out = EventSelection::kLock;
  } else {
    return false;
  }
  return true;
}

std::vector<std::string> Profile::Notes() const {
  std::vector<std::string> notes;
  if (!unfinished_.empty()) notes.push_back(unfinished_);
  if (dropped_samples_ > 0) {
    notes.push_back("the recording dropped " + std::to_string(dropped_samples_) +
                    " samples and events (its sample buffer was full; their weight went to "
                    "their threads' next samples of the kind)");
  }
  if (dropped_spans_ > 0) {
    notes.push_back("the recording dropped " + std::to_string(dropped_spans_) +
                    " closed spans (a thread's span log was full): span counts, latency "
                    "percentiles and cpu/span leave them out; what fell inside them keeps the "
                    "context it read, in an interval of its own");
  }
  return notes;
}

void Profile::set_event_types(const std::vector<std::string>& types,
                              const std::string& value_field) {
  event_types_.clear();
  for (const std::string& type : types) event_types_.push_back(EventType{type});
  value_field_ = value_field;
}

WeightUnit UnitOf(EventSelection selection) {
  switch (selection) {
    case EventSelection::kAlloc:
      return WeightUnit::kBytes;
    case EventSelection::kLock:
      return WeightUnit::kNanoseconds;
    default:
      return WeightUnit::kSamples;
  }
}

std::string JavaClassName(const std::string& jvm_name) {
  size_t dimensions = 0;
  while (dimensions < jvm_name.size() && jvm_name[dimensions] == '[') dimensions++;
  std::string name = jvm_name.substr(dimensions);
  if (dimensions > 0) {
    static const std::map<char, const char*> kPrimitives = {
        {'Z', "boolean"}, {'B', "byte"}, {'C', "char"},  {'S', "short"},
        {'I', "int"},     {'J', "long"}, {'F', "float"}, {'D', "double"}};
    auto primitive = kPrimitives.find(name.empty() ? '\0' : name[0]);
    if (name.size() == 1 && primitive != kPrimitives.end()) {
      name = primitive->second;
    } else if (name.size() >= 2 && name.front() == 'L' && name.back() == ';') {
      name = name.substr(1, name.size() - 2);
    }
  }
  name = DottedClassName(std::move(name));
  for (size_t i = 0; i < dimensions; i++) name += "[]";
  return name;
}

int64_t Profile::period(SampleKind kind) const {
  switch (kind) {
    case SampleKind::kCpu:
      return cpu_interval_nanos_;
    case SampleKind::kWall:
      return wall_interval_nanos_;
    case SampleKind::kAllocation:
      return alloc_interval_bytes_;
    case SampleKind::kMonitorEnter:
    case SampleKind::kThreadPark:
    case SampleKind::kEvent:
      break;
  }
  return 0;
}

bool Measure::Holds(const Sample& sample) const {
  return sample.kind == kind && sample.event_type == event_type;
}

std::vector<Measure> Profile::Measures() const {
  std::set<std::pair<SampleKind, int32_t>> loaded;
  for (const Sample& sample : samples_) loaded.emplace(sample.kind, sample.event_type);
  std::vector<Measure> measures;
  for (SampleKind kind : kSampleKinds) {
    if (loaded.count({kind, -1}) != 0) {
      measures.push_back(Measure{kind, -1, SampleKindName(kind), MeasureUnit(kind)});
    }
  }
  for (size_t i = 0; i < event_types_.size(); i++) {
    if (loaded.count({SampleKind::kEvent, static_cast<int32_t>(i)}) == 0) continue;
    const WeightUnit unit = event_types_[i].unit;
    measures.push_back(Measure{SampleKind::kEvent, static_cast<int32_t>(i), event_types_[i].name,
                               unit == WeightUnit::kNanoseconds ? "nanoseconds"
                               : unit == WeightUnit::kBytes     ? "bytes"
                                                                : "count"});
  }
  return measures;
}

int64_t Profile::CountOf(const Sample& sample) { return IsSample(sample.kind) ? sample.weight : 1; }

int64_t Profile::MeasureOf(const Sample& sample) const {
  return IsSample(sample.kind) ? sample.weight * period(sample.kind) : sample.weight;
}

int Profile::AttributeIndex(const std::string& name) const {
  for (size_t i = 0; i < attribute_names_.size(); i++) {
    if (attribute_names_[i] == name || attribute_fields_[i] == name) return static_cast<int>(i);
  }
  return -1;
}

std::map<std::string, LatencyHistogram> Profile::LatencyBy(int attribute) const {
  std::map<std::string, LatencyHistogram> by_value;
  for (const auto& [values, histogram] : latencies_) {
    const bool has = attribute >= 0 && static_cast<size_t>(attribute) < values.size();
    by_value[has ? values[attribute] : ""].Merge(histogram);
  }
  return by_value;
}

const std::string& Profile::ValueOf(const Sample& sample, int attribute) const {
  static const std::string kUnset;
  if (sample.context < 0 || attribute < 0) return kUnset;
  const std::vector<std::string>& values = contexts_[sample.context].values;
  return static_cast<size_t>(attribute) < values.size() ? values[attribute] : kUnset;
}

namespace {

// Reads `path`, allowing unfinished chunks; a header caught in the middle of an update (a
// writer publishing a chunk right now) is read again after a moment, for up to ~1 s like the
// JDK's readers. A chunk still locked after that lost its writer: one killed while patching a
// repository chunk's header left it naming published bytes, and it is read as it says; one
// killed while appending a whole chunk (file mode) left a chunk that does not fit the file, and
// the file ends with the chunks before it.
Status ReadRecording(const std::string& path, JfrReader* reader) {
  JfrReader::Options options;
  options.allow_unfinished_chunks = true;
  for (int attempt = 0;; attempt++) {
    Status read = reader->Read(path, options);
    if (!reader->met_locked_header()) return read;
    if (attempt == 500) {
      options.read_locked_chunks = true;
      return reader->Read(path, options);
    }
    usleep(2000);
  }
}

}  // namespace

bool Profile::Load(const std::string& path, EventSelection selection, std::string* error) {
  JfrReader reader;
  if (Status read = ReadRecording(path, &reader); !read.ok()) {
    *error = read.message();
    return false;
  }
  return Add(reader, path, selection, error);
}

bool Profile::LoadBytes(const std::string& name, std::vector<uint8_t> bytes,
                        EventSelection selection, std::string* error) {
  JfrReader reader;
  JfrReader::Options options;
  options.allow_unfinished_chunks = true;
  if (Status read = reader.Parse(name, std::move(bytes), options); !read.ok()) {
    *error = read.message();
    return false;
  }
  return Add(reader, name, selection, error);
}

Status Profile::ValueSourceOf(const JfrEvent& event, int32_t* event_type, int* field) {
  const JfrClass& type = *event.type;
  *event_type = -1;
  for (size_t i = 0; i < event_types_.size(); i++) {
    if (event_types_[i].name == type.name) *event_type = static_cast<int32_t>(i);
  }
  if (*event_type < 0) return Status();
  *field = type.FieldIndex(value_field_);
  // Numeric fields by the values of this event (type ids are the writer's own; a pooled
  // number is a reference, resolved to its object).
  const std::vector<JfrValue>& values = event.value.items();
  auto numeric_at = [&](size_t f) {
    return f < values.size() && !type.fields[f].pooled &&
           (values[f].kind() == JfrValue::Kind::kInteger ||
            values[f].kind() == JfrValue::Kind::kFloat);
  };
  std::string numeric;                               // for the message
  for (size_t f = 1; f < type.fields.size(); f++) {  // after startTime
    if (numeric_at(f)) numeric += (numeric.empty() ? "" : ", ") + type.fields[f].name;
  }
  if (*field < 0 || !numeric_at(static_cast<size_t>(*field))) {
    return Status::InvalidArgument(
        "--value " + value_field_ + ": " + type.name +
        (*field < 0 ? " has no field of that name" : "'s field is not a number") +
        " (its numeric fields: " + (numeric.empty() ? "none" : numeric) +
        "); choose one with --value");
  }
  EventType& known = event_types_[*event_type];
  const JfrField& chosen = type.fields[*field];
  const WeightUnit unit = !chosen.timespan.empty()      ? WeightUnit::kNanoseconds
                          : !chosen.data_amount.empty() ? WeightUnit::kBytes
                                                        : WeightUnit::kNumber;
  if (known.seen && known.unit != unit) known.unit = WeightUnit::kNumber;
  if (!known.seen) known.unit = unit;
  known.seen = true;
  return Status();
}

bool Profile::Add(const JfrReader& reader, const std::string& path, EventSelection selection,
                  std::string* error) {
  chunk_count_ += reader.chunks().size();
  const JfrChunkInfo& last = reader.chunks().back();
  // Only the newest file's last chunk says whether the recording was finished: the chunk files
  // of a repository before the last one are finished but not final.
  unfinished_.clear();
  if (last.generation == kChunkGenerationLocked) {
    unfinished_ = path + ": chunk " + std::to_string(reader.chunks().size()) +
                  " stayed locked (its writer was killed while updating its header?): read up "
                  "to what its header names";
  } else if (reader.met_locked_header()) {
    unfinished_ = path + ": the chunk after chunk " + std::to_string(reader.chunks().size()) +
                  " stayed locked (its writer was killed while writing it?): read the chunks "
                  "before it";
  } else if (last.generation != 0) {
    unfinished_ = path + ": chunk " + std::to_string(reader.chunks().size()) +
                  " is being written (or its writer stopped): read up to its last flush";
  } else if ((last.flags & kChunkFlagFinal) == 0) {
    unfinished_ = path +
                  ": the recording is not finished (no final chunk): it is being written, or "
                  "its writer stopped; read up to its last published chunk";
  }

  if (!reader.chunks().empty()) {
    start_nanos_ = reader.chunks().front().start_nanos;
    for (const JfrChunkInfo& chunk : reader.chunks()) {
      const int64_t end = chunk.start_nanos + static_cast<int64_t>(chunk.duration_nanos);
      duration_nanos_ = std::max(duration_nanos_, end - start_nanos_);
    }
  }
  // Registered attribute names, to show "http.route" rather than the field name "http_route".
  std::map<std::string, std::string> name_of_field;
  bool ctxprof_recording = false;
  for (const JfrEvent& event : reader.events()) {
    if (event.type_name() == "ctxprof.ProfilerSettings") {
      ctxprof_recording = true;
      if (cpu_interval_nanos_ == 0) cpu_interval_nanos_ = event.Field("interval").integer();
      for (const std::string& name : SplitCommas(event.Field("attributes").string())) {
        name_of_field.emplace(JfrMetadata::FieldNameOf(name), name);
      }
      if (alloc_interval_bytes_ == 0) {
        const JfrValue& alloc = event.Field("allocInterval");
        alloc_interval_bytes_ = alloc.is_null() ? 0 : alloc.integer();
      }
    } else if (event.type_name() == "ctxprof.ProfilerCounters") {
      const JfrValue& samples = event.Field("droppedSamples");
      const JfrValue& spans = event.Field("droppedSpans");  // not in older recordings
      if (!samples.is_null()) dropped_samples_ = std::max(dropped_samples_, samples.integer());
      if (!spans.is_null()) dropped_spans_ = std::max(dropped_spans_, spans.integer());
    } else if (event.type_name() == "jdk.ActiveSetting") {
      // async-profiler's names, which ctxprof writes too.
      const std::string& name = event.Field("name").string();
      int64_t* interval = name == "wall"    ? &wall_interval_nanos_
                          : name == "alloc" ? &alloc_interval_bytes_
                                            : nullptr;
      if (interval != nullptr && *interval == 0) {
        *interval = strtoll(event.Field("value").string().c_str(), nullptr, 10);
      }
    }
  }
  // Attribute fields in declaration order. Chunks of one recording share one metadata; taking
  // the union keeps a file concatenated from several recordings readable.
  std::unordered_map<const JfrClass*, std::vector<int>> attribute_slots;  // field -> attribute
  auto slots_of = [&](const JfrClass* type) -> const std::vector<int>& {
    auto found = attribute_slots.find(type);
    if (found != attribute_slots.end()) return found->second;
    std::vector<int> slots(type->fields.size(), -1);
    for (size_t f = 0; f < type->fields.size(); f++) {
      const std::string& field = type->fields[f].name;
      if (IsFixedContextField(field)) continue;
      int index = -1;
      for (size_t a = 0; a < attribute_fields_.size(); a++) {
        if (attribute_fields_[a] == field) index = static_cast<int>(a);
      }
      if (index < 0) {
        index = static_cast<int>(attribute_fields_.size());
        attribute_fields_.push_back(field);
        auto name = name_of_field.find(field);
        attribute_names_.push_back(name == name_of_field.end() ? field : name->second);
      }
      slots[f] = index;
    }
    return attribute_slots.emplace(type, std::move(slots)).first->second;
  };
  for (const JfrEvent& event : reader.events()) {
    if (event.type_name() == "ctxprof.Context") slots_of(event.type);
  }
  for (const JfrEvent& event : reader.events()) {
    if (event.type_name() != "ctxprof.SpanLatency") continue;
    const std::vector<int>& slots = slots_of(event.type);  // may add attributes
    std::vector<std::string> values(attribute_names_.size());
    const std::vector<JfrValue>& fields = event.value.items();
    for (size_t f = 0; f < slots.size() && f < fields.size(); f++) {
      if (slots[f] >= 0) values[slots[f]] = fields[f].string();
    }
    LatencyHistogram histogram;
    // A malformed bucket list adds nothing: the count and sum still hold.
    const JfrValue& deltas = event.Field("bucketDeltas");
    if (deltas.is_null()) {
      histogram.AddBucketsText(event.Field("buckets").string());  // an older recording
    } else {
      histogram.AddBucketDeltasText(deltas.string());
    }
    histogram.AddBucket(0, event.Field("spans").integer() - histogram.count(),
                        event.Field("totalDuration").integer(),
                        event.Field("maxDuration").integer());
    latencies_[values].Merge(histogram);
  }

  std::unordered_map<const JfrEvent*, int32_t> context_of_event;
  auto intern_context = [&](const JfrEvent* event) -> int32_t {
    auto known = context_of_event.find(event);
    if (known != context_of_event.end()) return known->second;
    Context context;
    context.trace_id = event->TraceId();
    context.span_id = event->SpanId();
    context.values.assign(attribute_names_.size(), "");
    const std::vector<int>& slots = slots_of(event->type);
    const std::vector<JfrValue>& fields = event->value.items();
    for (size_t f = 0; f < slots.size() && f < fields.size(); f++) {
      if (slots[f] >= 0) context.values[slots[f]] = fields[f].string();
    }
    std::vector<std::string> key = context.values;
    key.push_back(context.trace_id);
    key.push_back(context.span_id);
    auto inserted = context_index_.emplace(std::move(key), static_cast<int32_t>(contexts_.size()));
    if (inserted.second) contexts_.push_back(std::move(context));
    context_of_event.emplace(event, inserted.first->second);
    return inserted.first->second;
  };

  auto intern_frame = [&](Frame frame) -> uint32_t {
    std::string key = frame.class_name + '\0' + frame.method_name + '\0' + frame.descriptor + '\0' +
                      std::to_string(frame.line) + '\0' + frame.type;
    auto inserted = frame_index_.emplace(std::move(key), static_cast<uint32_t>(frames_.size()));
    if (inserted.second) frames_.push_back(std::move(frame));
    return inserted.first->second;
  };
  // Events that reference one pool entry share its resolved value, so the address of its
  // frame list identifies the stack without looking at the frames again (a pure cache: other
  // entries with equal frames still meet in stack_index).
  std::unordered_map<const void*, uint32_t> stack_of_entry;
  auto intern_stack = [&](const JfrValue& stack_trace) -> uint32_t {
    const void* entry = &stack_trace.items();
    auto cached = stack_of_entry.find(entry);
    if (cached != stack_of_entry.end()) return cached->second;
    std::vector<uint32_t> stack;
    for (JfrFrame& raw : JfrReader::FramesOf(stack_trace)) {
      Frame frame{DottedClassName(std::move(raw.class_name)), std::move(raw.method_name),
                  std::move(raw.descriptor), raw.line_number, std::move(raw.type)};
      if (!frame.IsJava()) {
        frame.method_name = JoinNativeSymbol(frame.method_name, frame.descriptor);
        frame.descriptor.clear();
      }
      stack.push_back(intern_frame(std::move(frame)));
    }
    auto inserted = stack_index_.emplace(stack, static_cast<uint32_t>(stacks_.size()));
    if (inserted.second) stacks_.push_back(std::move(stack));
    stack_of_entry.emplace(entry, inserted.first->second);
    return inserted.first->second;
  };

  unit_ = UnitOf(selection);
  // The class frame of an allocation or lock event.
  auto class_frame = [&](const JfrValue& klass) -> uint32_t {
    return intern_frame(
        Frame{klass.is_null() ? "(unknown class)" : JavaClassName(klass.Field("name").string()), "",
              "", 0, "Class"});
  };
  std::map<std::pair<int64_t, std::string>, uint32_t> thread_index;
  // --events TYPE: per declared type, its index in event_types_ and its value field's.
  struct ValueSource {
    int32_t event_type = -1;
    int field = -1;
  };
  std::unordered_map<const JfrClass*, ValueSource> value_sources;
  for (const JfrEvent& event : reader.events()) {
    SampleKind kind;
    ValueSource source;
    if (selection == EventSelection::kTypes) {
      auto known = value_sources.find(event.type);
      if (known == value_sources.end()) {
        if (event.type->FieldIndex("stackTrace") >= 0) types_with_stacks_.insert(event.type_name());
        Status checked = ValueSourceOf(event, &source.event_type, &source.field);
        if (!checked.ok()) {
          *error = path + ": " + checked.message();
          return false;
        }
        known = value_sources.emplace(event.type, source).first;
      }
      source = known->second;
      if (source.event_type < 0) continue;
      kind = SampleKind::kEvent;
    } else if (!KindOf(event.type_name(), ctxprof_recording, &kind) || !Selects(selection, kind)) {
      continue;
    }
    Sample sample;
    sample.kind = kind;
    sample.event_type = source.event_type;
    const JfrValue& thread = event.thread();
    const int64_t thread_key = JfrReader::ThreadKey(thread);
    // A wait joins its context at its end: the context was read there, and its start may fall
    // in the interval of a sample the sampler dated later than it was taken (docs/JFR.md).
    // Any other event joins at its start.
    const int64_t join_ticks =
        IsSample(kind) || kind == SampleKind::kAllocation || kind == SampleKind::kEvent
            ? event.start_ticks()
            : event.start_ticks() + event.Field("duration").integer();
    int64_t span_nanos = 0;
    const JfrEvent* context = reader.ContextAt(thread_key, join_ticks, &span_nanos, event.chunk);
    if (context != nullptr) sample.span_nanos = span_nanos;
    if (span_filter_.active && (context == nullptr || sample.span_nanos < span_filter_.min_nanos ||
                                sample.span_nanos > span_filter_.max_nanos)) {
      continue;
    }
    sample.thread_id = thread.Field("osThreadId").integer();
    const JfrValue& java_name = thread.Field("javaName");
    std::string thread_name =
        java_name.is_null() ? thread.Field("osName").string() : java_name.string();
    auto known = thread_index.emplace(std::make_pair(sample.thread_id, thread_name),
                                      static_cast<uint32_t>(threads_.size()));
    if (known.second) threads_.push_back(Thread{sample.thread_id, std::move(thread_name)});
    sample.thread = known.first->second;
    sample.ticks = event.start_ticks();
    sample.epoch_nanos = reader.EpochNanosOf(sample.ticks, event.chunk);
    sample.stack = intern_stack(event.Field("stackTrace"));
    if (IsSample(kind)) {
      const JfrValue& samples = event.Field("samples");
      const JfrValue& weight = samples.is_null() ? event.Field("weight") : samples;
      sample.weight = weight.is_null() ? 1 : weight.integer();
    } else if (kind == SampleKind::kEvent) {
      const size_t field = static_cast<size_t>(source.field);
      sample.weight =
          field < event.value.items().size()
              ? ValueInUnit(reader, event.type->fields[field], event.value.items()[field])
              : 0;
    } else {
      const char* class_field = sample.kind == SampleKind::kAllocation     ? "objectClass"
                                : sample.kind == SampleKind::kMonitorEnter ? "monitorClass"
                                                                           : "parkedClass";
      std::vector<uint32_t> stack = stacks_[sample.stack];
      stack.insert(stack.begin(), class_frame(event.Field(class_field)));
      auto inserted = stack_index_.emplace(stack, static_cast<uint32_t>(stacks_.size()));
      if (inserted.second) stacks_.push_back(std::move(stack));
      sample.stack = inserted.first->second;
      sample.weight = sample.kind == SampleKind::kAllocation
                          ? AllocatedBytes(event)
                          : reader.NanosOf(event.Field("duration").integer());
    }
    sample.context = context == nullptr ? -1 : intern_context(context);
    total_weight_ += sample.weight;
    samples_.push_back(sample);
  }
  if (selection == EventSelection::kTypes) {
    // One unit when every type's value field has it, else plain numbers.
    bool first = true;
    for (const EventType& type : event_types_) {
      if (!type.seen) continue;
      unit_ = first || unit_ == type.unit ? type.unit : WeightUnit::kNumber;
      first = false;
    }
  }
  return true;
}

}  // namespace ctxprof
