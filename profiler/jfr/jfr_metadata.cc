#include "profiler/jfr/jfr_metadata.h"

#include <map>
#include <utility>

namespace ctxprof {

namespace {

// One element of the metadata tree (§5.2 of the format note): a name, string attributes in
// order, children in order.
struct Element {
  std::string name;
  std::vector<std::pair<std::string, std::string>> attributes;
  std::vector<Element> children;

  Element& Attribute(const std::string& key, const std::string& value) {
    attributes.emplace_back(key, value);
    return *this;
  }
  Element& Child(const std::string& child_name) {
    children.push_back(Element{child_name, {}, {}});
    return children.back();
  }
};

std::string Id(uint32_t id) { return std::to_string(id); }

// Builds <class> elements and their fields and annotations.
class ClassBuilder {
 public:
  explicit ClassBuilder(Element* element) : element_(element) {}

  ClassBuilder& Annotate(uint32_t annotation_type, const std::string& value = "") {
    Annotation(element_, annotation_type, value);
    return *this;
  }
  ClassBuilder& Label(const std::string& label) { return Annotate(kJfrTypeLabel, label); }
  ClassBuilder& Categories(const std::vector<std::string>& categories) {
    Element& annotation = element_->Child("annotation").Attribute("class", Id(kJfrTypeCategory));
    for (size_t i = 0; i < categories.size(); i++) {
      annotation.Attribute("value-" + std::to_string(i), categories[i]);
    }
    return *this;
  }
  // A field; `pooled` adds constantPool="true", `array` dimension="1". Omitted attributes mean
  // false: the JDK tests presence, so "false" would mean true.
  ClassBuilder& Field(const std::string& name, uint32_t type, bool pooled = false,
                      bool array = false, const std::string& label = "") {
    Element& field = element_->Child("field").Attribute("name", name).Attribute("class", Id(type));
    if (pooled) field.Attribute("constantPool", "true");
    if (array) field.Attribute("dimension", "1");
    if (!label.empty()) Annotation(&field, kJfrTypeLabel, label);
    last_field_ = &field;
    return *this;
  }
  // Adds an annotation to the last field.
  ClassBuilder& FieldAnnotate(uint32_t annotation_type, const std::string& value = "") {
    Annotation(last_field_, annotation_type, value);
    return *this;
  }

 private:
  static void Annotation(Element* owner, uint32_t type, const std::string& value) {
    Element& annotation = owner->Child("annotation").Attribute("class", Id(type));
    if (!value.empty()) annotation.Attribute("value", value);
  }

  Element* element_;
  Element* last_field_ = nullptr;
};

class MetadataTree {
 public:
  MetadataTree() : root_{"root", {}, {}} { metadata_ = &root_.Child("metadata"); }

  ClassBuilder Class(const std::string& name, uint32_t id, const std::string& super_type = "",
                     bool simple = false) {
    Element& element = metadata_->Child("class").Attribute("name", name).Attribute("id", Id(id));
    if (!super_type.empty()) element.Attribute("superType", super_type);
    if (simple) element.Attribute("simpleType", "true");
    return ClassBuilder(&element);
  }
  ClassBuilder Event(const std::string& name, uint32_t id, const std::string& label,
                     const std::vector<std::string>& categories) {
    ClassBuilder builder = Class(name, id, "jdk.jfr.Event");
    builder.Label(label).Categories(categories);
    builder.Field("startTime", kJfrTypeLong, false, false, "Start Time")
        .FieldAnnotate(kJfrTypeTimestamp, "TICKS");
    return builder;
  }

  void Serialize(JfrBuffer* out) {
    // metadata must not be reallocated while children are added; finish it before the region.
    root_.Child("region")
        .Attribute("locale", "en_US")
        .Attribute("gmtOffset", "0")
        .Attribute("dst", "0");
    Collect(root_);
    out->PutVarint(strings_.size());
    for (const std::string& s : strings_) out->PutString(s);
    Write(root_, out);
  }

 private:
  uint32_t Index(const std::string& s) {
    auto [it, inserted] = index_.emplace(s, static_cast<uint32_t>(strings_.size()));
    if (inserted) strings_.push_back(s);
    return it->second;
  }
  void Collect(const Element& element) {
    Index(element.name);
    for (const auto& [key, value] : element.attributes) {
      Index(key);
      Index(value);
    }
    for (const Element& child : element.children) Collect(child);
  }
  void Write(const Element& element, JfrBuffer* out) {
    out->PutVarint(Index(element.name));
    out->PutVarint(element.attributes.size());
    for (const auto& [key, value] : element.attributes) {
      out->PutVarint(Index(key));
      out->PutVarint(Index(value));
    }
    out->PutVarint(element.children.size());
    for (const Element& child : element.children) Write(child, out);
  }

  Element root_;
  Element* metadata_;
  std::map<std::string, uint32_t> index_;
  std::vector<std::string> strings_;
};

void DeclareTypes(MetadataTree* tree) {
  const std::pair<const char*, uint32_t> primitives[] = {
      {"boolean", kJfrTypeBoolean}, {"char", kJfrTypeChar}, {"float", kJfrTypeFloat},
      {"double", kJfrTypeDouble},   {"byte", kJfrTypeByte}, {"short", kJfrTypeShort},
      {"int", kJfrTypeInt},         {"long", kJfrTypeLong}, {"java.lang.String", kJfrTypeString},
  };
  for (const auto& [name, id] : primitives) tree->Class(name, id);

  const char* annotation = "java.lang.annotation.Annotation";
  tree->Class("jdk.jfr.Label", kJfrTypeLabel, annotation).Field("value", kJfrTypeString);
  tree->Class("jdk.jfr.Description", kJfrTypeDescription, annotation)
      .Field("value", kJfrTypeString);
  tree->Class("jdk.jfr.Category", kJfrTypeCategory, annotation)
      .Field("value", kJfrTypeString, false, true);
  tree->Class("jdk.jfr.ContentType", kJfrTypeContentType, annotation);
  tree->Class("jdk.jfr.Timestamp", kJfrTypeTimestamp, annotation)
      .Annotate(kJfrTypeContentType)
      .Field("value", kJfrTypeString);
  tree->Class("jdk.jfr.Timespan", kJfrTypeTimespan, annotation)
      .Annotate(kJfrTypeContentType)
      .Field("value", kJfrTypeString);
  tree->Class("jdk.jfr.Unsigned", kJfrTypeUnsigned, annotation).Annotate(kJfrTypeContentType);
  tree->Class("jdk.jfr.DataAmount", kJfrTypeDataAmount, annotation)
      .Annotate(kJfrTypeContentType)
      .Field("value", kJfrTypeString);
  tree->Class("jdk.jfr.MemoryAddress", kJfrTypeMemoryAddress, annotation)
      .Annotate(kJfrTypeContentType);
  tree->Class("jdk.jfr.Contextual", kJfrTypeContextual, annotation);

  tree->Class("java.lang.Thread", kJfrTypeThread)
      .Label("Thread")
      .Field("osName", kJfrTypeString, false, false, "OS Thread Name")
      .Field("osThreadId", kJfrTypeLong, false, false, "OS Thread Id")
      .Field("javaName", kJfrTypeString, false, false, "Java Thread Name")
      .Field("javaThreadId", kJfrTypeLong, false, false, "Java Thread Id")
      .Field("virtual", kJfrTypeBoolean, false, false, "Virtual Thread");
  tree->Class("java.lang.Class", kJfrTypeClass)
      .Label("Java Class")
      .Field("classLoader", kJfrTypeClassLoader, true, false, "Class Loader")
      .Field("name", kJfrTypeSymbol, true, false, "Name")
      .Field("package", kJfrTypePackage, true, false, "Package")
      .Field("modifiers", kJfrTypeInt, false, false, "Access Modifiers");
  tree->Class("jdk.types.ClassLoader", kJfrTypeClassLoader)
      .Label("Java Class Loader")
      .Field("type", kJfrTypeClass, true, false, "Type")
      .Field("name", kJfrTypeSymbol, true, false, "Name");
  tree->Class("jdk.types.FrameType", kJfrTypeFrameType, "", true)
      .Label("Frame type")
      .Field("description", kJfrTypeString, false, false, "Description");
  tree->Class("jdk.types.ThreadState", kJfrTypeThreadState, "", true)
      .Label("Java Thread State")
      .Field("name", kJfrTypeString, false, false, "Name");
  tree->Class("jdk.types.StackTrace", kJfrTypeStackTrace)
      .Label("Stacktrace")
      .Field("truncated", kJfrTypeBoolean, false, false, "Truncated")
      .Field("frames", kJfrTypeStackFrame, false, true, "Stack Frames");
  tree->Class("jdk.types.StackFrame", kJfrTypeStackFrame)
      .Field("method", kJfrTypeMethod, true, false, "Java Method")
      .Field("lineNumber", kJfrTypeInt, false, false, "Line Number")
      .Field("bytecodeIndex", kJfrTypeInt, false, false, "Bytecode Index")
      .Field("type", kJfrTypeFrameType, true, false, "Frame Type");
  tree->Class("jdk.types.Method", kJfrTypeMethod)
      .Label("Java Method")
      .Field("type", kJfrTypeClass, true, false, "Type")
      .Field("name", kJfrTypeSymbol, true, false, "Name")
      .Field("descriptor", kJfrTypeSymbol, true, false, "Descriptor")
      .Field("modifiers", kJfrTypeInt, false, false, "Access Modifiers")
      .Field("hidden", kJfrTypeBoolean, false, false, "Hidden");
  tree->Class("jdk.types.Package", kJfrTypePackage)
      .Label("Package")
      .Field("name", kJfrTypeSymbol, true, false, "Name");
  tree->Class("jdk.types.Symbol", kJfrTypeSymbol, "", true)
      .Label("Symbol")
      .Field("string", kJfrTypeString, false, false, "String");
}

// A sample event: startTime, then the thread (`thread_field`), stackTrace and state, as the JDK
// and async-profiler declare them; the caller adds the fields after state.
ClassBuilder DeclareSampleEvent(MetadataTree* tree, const std::string& name, uint32_t id,
                                const std::string& label,
                                const std::vector<std::string>& categories,
                                const char* thread_field) {
  return tree->Event(name, id, label, categories)
      .Field(thread_field, kJfrTypeThread, true, false, "Thread")
      .Field("stackTrace", kJfrTypeStackTrace, true, false, "Stack Trace")
      .Field("state", kJfrTypeThreadState, true, false, "Thread State");
}

void DeclareContextId(const JfrEventLayout& layout, ClassBuilder* event) {
  if (!layout.context_id) return;
  event->Field("contextId", kJfrTypeLong, false, false, "Context Id")
      .FieldAnnotate(kJfrTypeDescription,
                     "The ctxprof.Context events of this chunk with this contextId hold the "
                     "event's context; 0 = no context");
}

// The JDK's runtime events, field for field (jdk.jfr.internal's definitions in JDK 17 and 25),
// each ending with contextId when the layout has it.
void DeclareRuntimeEvents(MetadataTree* tree, const JfrEventLayout& layout) {
  const std::vector<std::string> categories = {"Java Application"};
  const bool tlab = layout.tlab_allocations;
  ClassBuilder allocation =
      tlab ? tree->Event("jdk.ObjectAllocationInNewTLAB", kJfrTypeObjectAllocationInNewTLAB,
                         "Allocation in new TLAB", categories)
           : tree->Event("jdk.ObjectAllocationSample", kJfrTypeObjectAllocationSample,
                         "Object Allocation Sample", categories);
  allocation.Field("eventThread", kJfrTypeThread, true, false, "Event Thread")
      .Field("stackTrace", kJfrTypeStackTrace, true, false, "Stack Trace")
      .Field("objectClass", kJfrTypeClass, true, false, "Object Class");
  if (tlab) {
    allocation.Field("allocationSize", kJfrTypeLong, false, false, "Allocation Size")
        .FieldAnnotate(kJfrTypeDataAmount, "BYTES")
        .Field("tlabSize", kJfrTypeLong, false, false, "TLAB Size");
  } else {
    allocation.Field("weight", kJfrTypeLong, false, false, "Sample Weight");
  }
  allocation.FieldAnnotate(kJfrTypeDataAmount, "BYTES")
      .FieldAnnotate(kJfrTypeDescription,
                     "The bytes allocated that this sample stands for: the sum of the weights "
                     "estimates the bytes allocated");
  DeclareContextId(layout, &allocation);
  ClassBuilder monitor = tree->Event("jdk.JavaMonitorEnter", kJfrTypeJavaMonitorEnter,
                                     "Java Monitor Blocked", categories);
  monitor.Field("duration", kJfrTypeLong, false, false, "Duration")
      .FieldAnnotate(kJfrTypeTimespan, "TICKS")
      .Field("eventThread", kJfrTypeThread, true, false, "Event Thread")
      .Field("stackTrace", kJfrTypeStackTrace, true, false, "Stack Trace")
      .Field("monitorClass", kJfrTypeClass, true, false, "Monitor Class")
      .Field("previousOwner", kJfrTypeThread, true, false, "Previous Monitor Owner")
      .Field("address", kJfrTypeLong, false, false, "Monitor Address")
      .FieldAnnotate(kJfrTypeMemoryAddress);
  DeclareContextId(layout, &monitor);
  ClassBuilder park =
      tree->Event("jdk.ThreadPark", kJfrTypeThreadPark, "Java Thread Park", categories);
  park.Field("duration", kJfrTypeLong, false, false, "Duration")
      .FieldAnnotate(kJfrTypeTimespan, "TICKS")
      .Field("eventThread", kJfrTypeThread, true, false, "Event Thread")
      .Field("stackTrace", kJfrTypeStackTrace, true, false, "Stack Trace")
      .Field("parkedClass", kJfrTypeClass, true, false, "Class Parked On")
      .Field("timeout", kJfrTypeLong, false, false, "Park Timeout")
      .FieldAnnotate(kJfrTypeTimespan, "NANOSECONDS")
      .Field("until", kJfrTypeLong, false, false, "Park Until")
      .FieldAnnotate(kJfrTypeTimestamp, "MILLISECONDS_SINCE_EPOCH")
      .Field("address", kJfrTypeLong, false, false, "Address of Object Parked")
      .FieldAnnotate(kJfrTypeMemoryAddress);
  DeclareContextId(layout, &park);
}

// async-profiler's event for the sampled objects still alive at the end (its --live).
void DeclareLiveObjectEvent(MetadataTree* tree, const JfrEventLayout& layout) {
  ClassBuilder live = tree->Event("profiler.LiveObject", kJfrTypeLiveObject, "Live Object",
                                  {"ctxprof", "Profiling"});
  live.Field("eventThread", kJfrTypeThread, true, false, "Thread")
      .Field("stackTrace", kJfrTypeStackTrace, true, false, "Stack Trace")
      .Field("objectClass", kJfrTypeClass, true, false, "Object Class")
      .Field("allocationSize", kJfrTypeLong, false, false, "Allocation Size")
      .FieldAnnotate(kJfrTypeDataAmount, "BYTES")
      .Field("allocationTime", kJfrTypeLong, false, false, "Allocation Time")
      .FieldAnnotate(kJfrTypeTimestamp, "TICKS");
  DeclareContextId(layout, &live);
}

void DeclareEvents(MetadataTree* tree, const std::vector<std::string>& attribute_names,
                   const JfrEventLayout& layout) {
  const std::vector<std::string> jvm_profiling = {"Java Virtual Machine", "Profiling"};
  const std::vector<std::string> profiling = {"ctxprof", "Profiling"};
  ClassBuilder execution =
      DeclareSampleEvent(tree, "jdk.ExecutionSample", kJfrTypeExecutionSample,
                         "Method Profiling Sample", jvm_profiling, "sampledThread");
  DeclareContextId(layout, &execution);
  ClassBuilder wall = DeclareSampleEvent(tree, "profiler.WallClockSample", kJfrTypeWallClockSample,
                                         "Wall Clock Sample", profiling, "eventThread");
  wall.Field("samples", kJfrTypeInt, false, false, "Samples")
      .FieldAnnotate(kJfrTypeUnsigned)
      .FieldAnnotate(kJfrTypeDescription, "Sampling intervals this sample stands for")
      .Field("timeSpan", kJfrTypeLong, false, false, "Time Span")
      .FieldAnnotate(kJfrTypeTimespan, "TICKS");
  DeclareContextId(layout, &wall);
  ClassBuilder native =
      DeclareSampleEvent(tree, "jdk.NativeMethodSample", kJfrTypeNativeMethodSample,
                         "Wall Clock Sample", jvm_profiling, "sampledThread");
  native.Annotate(kJfrTypeDescription,
                  "A ctxprof wall-clock sample under the JDK's name (wallsamples=jdk), for "
                  "readers that know only jdk.ExecutionSample and jdk.NativeMethodSample");
  DeclareContextId(layout, &native);
  ClassBuilder cpu = DeclareSampleEvent(tree, "ctxprof.CpuSample", kJfrTypeCpuSample, "CPU Sample",
                                        profiling, "eventThread");
  cpu.Field("weight", kJfrTypeLong, false, false, "Weight")
      .FieldAnnotate(kJfrTypeDescription, "Sampling intervals this sample stands for");
  DeclareContextId(layout, &cpu);
  DeclareRuntimeEvents(tree, layout);
  DeclareLiveObjectEvent(tree, layout);

  ClassBuilder context =
      tree->Event("ctxprof.Context", JfrMetadata::ContextTypeIdOf(layout.attribute_generation),
                  "Context", {"ctxprof", "Context"});
  context.Annotate(kJfrTypeDescription,
                   "A thread's context during a run of its samples: [startTime, startTime + "
                   "duration) covers exactly those samples. W3C ids: the trace id is "
                   "traceIdHigh then traceIdLow, the span id spanId, each as 16 lowercase hex "
                   "digits of the unsigned value; 0 = none");
  context.Field("duration", kJfrTypeLong, false, false, "Duration")
      .FieldAnnotate(kJfrTypeTimespan, "TICKS")
      .Field("eventThread", kJfrTypeThread, true, false, "Thread");
  // The samples' contextIds resolve through it; without them it would carry nothing.
  if (layout.context_id) {
    context.Field("contextId", kJfrTypeLong, false, false, "Context Id")
        .FieldAnnotate(kJfrTypeDescription,
                       "The same in this chunk for the same context; samples carry it with "
                       "contextid=true");
  }
  // The ids as numbers, not hex text: a varint of the value (≤ 9 bytes, 1 for none) against 34
  // and 18 bytes of digits. @MemoryAddress makes the JDK's `jfr print` show them in hex.
  const std::pair<const char*, const char*> ids[] = {{"traceIdHigh", "Trace Id (high 64 bits)"},
                                                     {"traceIdLow", "Trace Id (low 64 bits)"},
                                                     {"spanId", "Span Id"}};
  for (const auto& [name, label] : ids) {
    context.Field(name, kJfrTypeLong, false, false, label)
        .FieldAnnotate(kJfrTypeMemoryAddress)
        .FieldAnnotate(kJfrTypeContextual);
  }
  for (const std::string& name : attribute_names) {
    context.Field(JfrMetadata::FieldNameOf(name), kJfrTypeString, true, false, name)
        .FieldAnnotate(kJfrTypeContextual);
  }

  ClassBuilder latency = tree->Event("ctxprof.SpanLatency",
                                     JfrMetadata::SpanLatencyTypeIdOf(layout.attribute_generation),
                                     "Span Latency", {"ctxprof", "Context"});
  latency.Annotate(kJfrTypeDescription,
                   "The durations of every span with these attribute values that closed in "
                   "[startTime, startTime + duration], written or not as a ctxprof.Context");
  latency.Field("duration", kJfrTypeLong, false, false, "Duration")
      .FieldAnnotate(kJfrTypeTimespan, "TICKS")
      .Field("spans", kJfrTypeLong, false, false, "Spans")
      .FieldAnnotate(kJfrTypeUnsigned)
      .Field("totalDuration", kJfrTypeLong, false, false, "Total Duration")
      .FieldAnnotate(kJfrTypeTimespan, "NANOSECONDS")
      .Field("maxDuration", kJfrTypeLong, false, false, "Longest Span")
      .FieldAnnotate(kJfrTypeTimespan, "NANOSECONDS")
      .Field("bucketDeltas", kJfrTypeString, false, false, "Buckets")
      .FieldAnnotate(kJfrTypeDescription,
                     "STEP[:COUNT] per non-empty bucket in order, space-separated (COUNT 1 when "
                     "absent): the bucket's index is the previous one's plus STEP (the first: "
                     "STEP). Index i < 128 holds durations of i ns; above, index 128 + 64 k + m "
                     "holds [(64 + m) << (k + 1), (65 + m) << (k + 1)) ns");
  for (const std::string& name : attribute_names) {
    latency.Field(JfrMetadata::FieldNameOf(name), kJfrTypeString, true, false, name);
  }

  // As async-profiler declares it: its converter and Pyroscope read `event`, `interval`, `wall`.
  tree->Event("jdk.ActiveSetting", kJfrTypeActiveSetting, "Profiler Setting", {"Flight Recorder"})
      .Field("id", kJfrTypeLong, false, false, "Event Id")
      .Field("name", kJfrTypeString, false, false, "Setting Name")
      .Field("value", kJfrTypeString, false, false, "Setting Value");

  const std::vector<std::string> categories = {"ctxprof", "Profiler"};
  tree->Event("ctxprof.ProfilerSettings", kJfrTypeProfilerSettings, "Profiler Settings", categories)
      .Field("engine", kJfrTypeString, false, false, "Engine")
      .Field("interval", kJfrTypeLong, false, false, "Interval")
      .FieldAnnotate(kJfrTypeTimespan, "NANOSECONDS")
      .Field("fallbacks", kJfrTypeString, false, false, "Fallbacks")
      .Field("clock", kJfrTypeString, false, false, "Clock")
      .Field("ticksPerSecond", kJfrTypeLong, false, false, "Ticks Per Second")
      .Field("cpuSamples", kJfrTypeString, false, false, "CPU Sample Event")
      .Field("stackDepth", kJfrTypeInt, false, false, "Stack Depth")
      .Field("attributes", kJfrTypeString, false, false, "Context Attributes")
      .Field("allocInterval", kJfrTypeLong, false, false, "Allocation Sampling Interval")
      .FieldAnnotate(kJfrTypeDataAmount, "BYTES")
      .FieldAnnotate(kJfrTypeDescription, "alloc=: 0 when allocations are not sampled")
      .Field("lockThreshold", kJfrTypeLong, false, false, "Lock Threshold (ns)")
      .FieldAnnotate(kJfrTypeDescription, "lock= in nanoseconds: -1 when lock events are off")
      .Field("select", kJfrTypeString, false, false, "Event Selection")
      .Field("version", kJfrTypeString, false, false, "ctxprof Version");
  ClassBuilder counters = tree->Event("ctxprof.ProfilerCounters", kJfrTypeProfilerCounters,
                                      "Profiler Counters", categories);
  counters.Annotate(kJfrTypeDescription, "Totals since the recording started");
  for (const char* field :
       {"samples", "cpuSamples", "wallSamples", "droppedSamples", "contextBusy", "contextTorn",
        "truncatedStacks", "dictionaryOverflows", "truncatedValues", "uploadedChunks",
        "droppedUploads", "allocationSamples", "monitorEnters", "threadParks", "liveObjects",
        "untrackedObjects", "timedSpans", "droppedSpans"}) {
    counters.Field(field, kJfrTypeLong).FieldAnnotate(kJfrTypeUnsigned);
  }
}

}  // namespace

const char* JfrFrameTypeName(JfrFrameType type) {
  switch (type) {
    case JfrFrameType::kInterpreted:
      return "Interpreted";
    case JfrFrameType::kJitCompiled:
      return "JIT compiled";
    case JfrFrameType::kInlined:
      return "Inlined";
    case JfrFrameType::kNative:
      return "Native";
    case JfrFrameType::kCpp:
      return "C++";
    case JfrFrameType::kKernel:
      return "Kernel";
  }
  return "Native";
}

const char* JfrThreadStateName(int key) {
  switch (key) {
    case 1:
      return "STATE_RUNNABLE";
    case 2:
      return "STATE_SLEEPING";
    default:
      return "STATE_DEFAULT";
  }
}

std::string JfrMetadata::FieldNameOf(std::string_view attribute_name) {
  std::string field(attribute_name);
  for (char& c : field) {
    if (c == '.' || c == '-') c = '_';
  }
  return field;
}

void JfrMetadata::SerializeDeclarations(const std::vector<std::string>& attribute_names,
                                        const JfrEventLayout& layout, JfrBuffer* out) {
  MetadataTree tree;
  DeclareTypes(&tree);
  DeclareEvents(&tree, attribute_names, layout);
  tree.Serialize(out);
}

void JfrMetadata::Write(const JfrBuffer& declarations, uint64_t metadata_id, uint64_t start_ticks,
                        JfrBuffer* out) {
  const size_t start = out->size();
  const size_t size_offset = out->ReservePaddedVarint();
  out->PutVarint(0);  // record type: metadata
  out->PutVarint(start_ticks);
  out->PutVarint(0);  // duration
  out->PutVarint(metadata_id);
  out->PutBytes(declarations.data(), declarations.size());
  out->PatchVarint(size_offset, out->size() - start);
}

void JfrMetadata::WriteStaticPools(JfrBuffer* out) {
  out->PutVarint(kJfrTypeFrameType);
  out->PutVarint(kJfrFrameTypeCount);
  for (int key = 0; key < kJfrFrameTypeCount; key++) {
    out->PutVarint(key);
    out->PutString(JfrFrameTypeName(static_cast<JfrFrameType>(key)));
  }
  out->PutVarint(kJfrTypeThreadState);
  out->PutVarint(kJfrThreadStateCount);
  for (int key = 1; key <= kJfrThreadStateCount; key++) {
    out->PutVarint(key);
    out->PutString(JfrThreadStateName(key));
  }
}

}  // namespace ctxprof
