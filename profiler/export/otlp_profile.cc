#include "profiler/export/otlp_profile.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "profiler/wire/protobuf.h"

namespace ctxprof {

namespace {

// Field numbers of opentelemetry/proto/profiles/v1development/profiles.proto and
// opentelemetry/proto/common/v1/common.proto (v1.10.0).
namespace field {
constexpr int kDataResourceProfiles = 1, kDataDictionary = 2;
constexpr int kResourceProfilesResource = 1, kResourceScopeProfiles = 2;
constexpr int kResourceAttributes = 1;
constexpr int kKeyValueKey = 1, kKeyValueValue = 2;
constexpr int kScopeScope = 1, kScopeProfiles = 2;
constexpr int kInstrumentationScopeName = 1;
constexpr int kProfileSampleType = 1, kProfileSamples = 2, kProfileTimeUnixNano = 3,
              kProfileDurationNano = 4, kProfilePeriodType = 5, kProfilePeriod = 6;
constexpr int kValueTypeType = 1, kValueTypeUnit = 2;
constexpr int kSampleStackIndex = 1, kSampleAttributeIndices = 2, kSampleLinkIndex = 3,
              kSampleValues = 4, kSampleTimestamps = 5;
constexpr int kDictionaryMappings = 1, kDictionaryLocations = 2, kDictionaryFunctions = 3,
              kDictionaryLinks = 4, kDictionaryStrings = 5, kDictionaryAttributes = 6,
              kDictionaryStacks = 7;
constexpr int kLocationLines = 3, kLocationAttributeIndices = 4;
constexpr int kLineFunctionIndex = 1, kLineLine = 2;
constexpr int kFunctionName = 1, kFunctionSystemName = 2;
constexpr int kStackLocationIndices = 1;
constexpr int kLinkTraceId = 1, kLinkSpanId = 2;
constexpr int kKeyValueAndUnitKey = 1, kKeyValueAndUnitValue = 2;
constexpr int kAnyValueString = 1;
}  // namespace field

// Hex text (any case) -> `bytes` bytes, zero-filled when the text is absent or malformed.
std::string IdBytes(const std::string& hex, size_t bytes) {
  std::string out(bytes, '\0');
  if (hex.size() != 2 * bytes) return out;
  for (size_t i = 0; i < hex.size(); i++) {
    const char c = hex[i];
    const int digit = c >= '0' && c <= '9'   ? c - '0'
                      : c >= 'a' && c <= 'f' ? c - 'a' + 10
                      : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                             : -1;
    if (digit < 0) return std::string(bytes, '\0');
    out[i / 2] = static_cast<char>(out[i / 2] << 4 | digit);
  }
  return out;
}

const char* FrameKindOf(const Frame& frame) {
  if (frame.IsJava()) return "jvm";
  return frame.type == "Kernel" ? "kernel" : "native";
}

// Interns messages of one dictionary table: index 0 is the table's zero message, added up front.
class Table {
 public:
  explicit Table(const std::string& zero = "") { Index(zero); }
  int64_t Index(const std::string& message) {
    auto inserted = index_.emplace(message, static_cast<int64_t>(messages_.size()));
    if (inserted.second) messages_.push_back(message);
    return inserted.first->second;
  }
  void WriteTo(int table_field, ProtoWriter* out) const {
    for (const std::string& message : messages_) out->AlwaysBytesField(table_field, message);
  }

 private:
  std::map<std::string, int64_t> index_;
  std::vector<std::string> messages_;
};

std::string ValueType(ProtoStringTable* strings, const std::string& type, const std::string& unit) {
  ProtoWriter message;
  message.VarintField(field::kValueTypeType, strings->Index(type));
  message.VarintField(field::kValueTypeUnit, strings->Index(unit));
  return message.bytes();
}

std::string StringAttribute(ProtoStringTable* strings, const std::string& key,
                            const std::string& value) {
  ProtoWriter any_value;
  any_value.AlwaysBytesField(field::kAnyValueString, value);
  ProtoWriter attribute;
  attribute.VarintField(field::kKeyValueAndUnitKey, strings->Index(key));
  attribute.BytesField(field::kKeyValueAndUnitValue, any_value.bytes());
  return attribute.bytes();
}

}  // namespace

std::string EncodeOtlp(const Profile& profile, const std::vector<LabelSource>& labels,
                       const std::vector<ResourceAttribute>& resource) {
  ProtoStringTable strings;
  Table functions, locations, stacks, attributes;
  Table links([] {  // link_table[0]: zero-filled ids, as the spec asks
    ProtoWriter link;
    link.AlwaysBytesField(field::kLinkTraceId, std::string(16, '\0'));
    link.AlwaysBytesField(field::kLinkSpanId, std::string(8, '\0'));
    return link.bytes();
  }());

  // Only what samples use goes into the tables: the spec wants no stack that no sample
  // references (a profile loaded with --events alloc still holds every event's stacks).
  std::vector<int64_t> location_of_frame(profile.frames().size(), -1);
  auto location_index = [&](uint32_t frame_index) {
    int64_t& index = location_of_frame[frame_index];
    if (index >= 0) return index;
    const Frame& frame = profile.frames()[frame_index];
    ProtoWriter function;
    function.VarintField(field::kFunctionName, strings.Index(frame.Name()));
    function.VarintField(field::kFunctionSystemName,
                         strings.Index(frame.Name() + frame.descriptor));
    ProtoWriter line;
    line.VarintField(field::kLineFunctionIndex, functions.Index(function.bytes()));
    line.VarintField(field::kLineLine, std::max(frame.line, 0));
    ProtoWriter location;
    location.AlwaysBytesField(field::kLocationLines, line.bytes());
    location.PackedField(field::kLocationAttributeIndices,
                         {static_cast<uint64_t>(attributes.Index(StringAttribute(
                             &strings, "profile.frame.type", FrameKindOf(frame))))});
    index = locations.Index(location.bytes());
    return index;
  };
  std::vector<int64_t> index_of_stack(profile.stacks().size(), -1);
  auto stack_index = [&](uint32_t stack) {
    int64_t& index = index_of_stack[stack];
    if (index >= 0) return index;
    std::vector<uint64_t> indices;
    for (uint32_t frame : profile.stacks()[stack]) {
      indices.push_back(static_cast<uint64_t>(location_index(frame)));  // leaf first
    }
    ProtoWriter message;
    message.PackedField(field::kStackLocationIndices, indices);
    index = stacks.Index(message.bytes());
    return index;
  };

  // Per kind: (stack, attribute indices, link) -> timestamps, and for the event kinds the
  // value of each.
  using SampleKey = std::tuple<int64_t, std::vector<uint64_t>, int64_t>;
  struct Events {
    std::vector<uint64_t> times;
    std::vector<uint64_t> values;
  };
  const std::vector<Measure> measures = profile.Measures();
  std::vector<std::map<SampleKey, Events>> samples(measures.size());
  for (const Sample& sample : profile.samples()) {
    std::vector<uint64_t> attribute_indices;
    for (const LabelSource& source : labels) {
      const std::string value = LabelValue(profile, sample, source);
      if (value.empty()) continue;
      attribute_indices.push_back(
          static_cast<uint64_t>(attributes.Index(StringAttribute(&strings, source.key, value))));
    }
    int64_t link = 0;
    if (sample.context >= 0) {
      const Context& context = profile.contexts()[sample.context];
      if (!context.trace_id.empty() || !context.span_id.empty()) {
        ProtoWriter message;
        message.AlwaysBytesField(field::kLinkTraceId, IdBytes(context.trace_id, 16));
        message.AlwaysBytesField(field::kLinkSpanId, IdBytes(context.span_id, 8));
        link = links.Index(message.bytes());
      }
    }
    size_t measure = 0;
    while (!measures[measure].Holds(sample)) measure++;
    Events& events = samples[measure][{stack_index(sample.stack), attribute_indices, link}];
    if (IsSample(sample.kind)) {
      events.times.insert(events.times.end(),
                          static_cast<size_t>(std::max<int64_t>(sample.weight, 1)),
                          static_cast<uint64_t>(sample.epoch_nanos));
    } else {
      events.times.push_back(static_cast<uint64_t>(sample.epoch_nanos));
      events.values.push_back(static_cast<uint64_t>(profile.MeasureOf(sample)));
    }
  }

  ProtoWriter scope_profiles;
  ProtoWriter scope;
  scope.BytesField(field::kInstrumentationScopeName, "ctxprof");
  scope_profiles.BytesField(field::kScopeScope, scope.bytes());
  for (size_t m = 0; m < measures.size(); m++) {
    const SampleKind kind = measures[m].kind;
    const std::string& name = measures[m].name;
    const int64_t period = profile.period(kind);
    ProtoWriter message;
    message.BytesField(field::kProfileSampleType,
                       IsSample(kind) ? ValueType(&strings, "samples", "count")
                                      : ValueType(&strings, name, measures[m].unit));
    for (const auto& [key, events] : samples[m]) {
      ProtoWriter sample;
      sample.VarintField(field::kSampleStackIndex, std::get<0>(key));
      sample.PackedField(field::kSampleAttributeIndices, std::get<1>(key));
      sample.VarintField(field::kSampleLinkIndex, std::get<2>(key));
      sample.PackedField(field::kSampleValues, events.values);
      sample.PackedFixed64Field(field::kSampleTimestamps, events.times);
      message.BytesField(field::kProfileSamples, sample.bytes());
    }
    message.Fixed64Field(field::kProfileTimeUnixNano, static_cast<uint64_t>(profile.start_nanos()));
    message.VarintField(field::kProfileDurationNano, profile.duration_nanos());
    if (period > 0) {
      message.BytesField(field::kProfilePeriodType, ValueType(&strings, name, measures[m].unit));
      message.VarintField(field::kProfilePeriod, period);
    }
    scope_profiles.BytesField(field::kScopeProfiles, message.bytes());
  }
  ProtoWriter resource_profiles;
  if (!resource.empty()) {
    ProtoWriter message;
    for (const ResourceAttribute& attribute : resource) {
      ProtoWriter any_value;
      any_value.AlwaysBytesField(field::kAnyValueString, attribute.second);
      ProtoWriter key_value;
      key_value.AlwaysBytesField(field::kKeyValueKey, attribute.first);
      key_value.AlwaysBytesField(field::kKeyValueValue, any_value.bytes());
      message.AlwaysBytesField(field::kResourceAttributes, key_value.bytes());
    }
    resource_profiles.AlwaysBytesField(field::kResourceProfilesResource, message.bytes());
  }
  resource_profiles.BytesField(field::kResourceScopeProfiles, scope_profiles.bytes());

  ProtoWriter dictionary;
  dictionary.AlwaysBytesField(field::kDictionaryMappings, "");  // mapping_table[0]: Mapping{}
  locations.WriteTo(field::kDictionaryLocations, &dictionary);
  functions.WriteTo(field::kDictionaryFunctions, &dictionary);
  links.WriteTo(field::kDictionaryLinks, &dictionary);
  for (const std::string& text : strings.strings()) {
    dictionary.AlwaysBytesField(field::kDictionaryStrings, text);
  }
  attributes.WriteTo(field::kDictionaryAttributes, &dictionary);
  stacks.WriteTo(field::kDictionaryStacks, &dictionary);

  ProtoWriter out;
  out.BytesField(field::kDataResourceProfiles, resource_profiles.bytes());
  out.BytesField(field::kDataDictionary, dictionary.bytes());
  return out.bytes();
}

}  // namespace ctxprof
