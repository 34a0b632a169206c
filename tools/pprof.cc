#include "tools/pprof.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <vector>

#include "profiler/wire/protobuf.h"

namespace ctxprof::tools {

namespace {

// profile.proto field numbers.
namespace field {
constexpr int kSampleType = 1, kSample = 2, kLocation = 4, kFunction = 5, kStringTable = 6,
              kTimeNanos = 9, kDurationNanos = 10, kPeriodType = 11, kPeriod = 12,
              kDefaultSampleType = 14;
constexpr int kValueTypeType = 1, kValueTypeUnit = 2;
constexpr int kSampleLocationId = 1, kSampleValue = 2, kSampleLabel = 3;
constexpr int kLabelKey = 1, kLabelStr = 2, kLabelNum = 3;
constexpr int kLocationId = 1, kLocationLine = 4;
constexpr int kLineFunctionId = 1, kLineLine = 2;
constexpr int kFunctionId = 1, kFunctionName = 2, kFunctionSystemName = 3, kFunctionFilename = 4;
}  // namespace field

std::string ValueType(ProtoStringTable* strings, const std::string& type, const std::string& unit) {
  ProtoWriter message;
  message.VarintField(field::kValueTypeType, strings->Index(type));
  message.VarintField(field::kValueTypeUnit, strings->Index(unit));
  return message.bytes();
}

}  // namespace

std::string EncodePprof(const Profile& profile, const std::vector<LabelSource>& labels) {
  ProtoStringTable strings;
  ProtoWriter out;
  // A sample type per measure that was loaded and is known (an interval kind needs its
  // period): per kind, and per event type of --events TYPE.
  const std::vector<Measure> loaded = profile.Measures();
  std::vector<Measure> measured;
  out.BytesField(field::kSampleType, ValueType(&strings, "samples", "count"));
  for (const Measure& measure : loaded) {
    if (IsSample(measure.kind) && profile.period(measure.kind) <= 0) continue;
    measured.push_back(measure);
    out.BytesField(field::kSampleType, ValueType(&strings, measure.name, measure.unit));
  }

  // Functions and locations: location id = frame index + 1 (ids must be non-zero).
  std::map<std::pair<std::string, std::string>, uint64_t> function_ids;
  std::vector<uint64_t> function_of_frame;
  for (const Frame& frame : profile.frames()) {
    auto inserted = function_ids.emplace(std::make_pair(frame.Name(), frame.descriptor),
                                         function_ids.size() + 1);
    function_of_frame.push_back(inserted.first->second);
    if (!inserted.second) continue;
    ProtoWriter function;
    function.VarintField(field::kFunctionId, static_cast<int64_t>(inserted.first->second));
    function.VarintField(field::kFunctionName, strings.Index(frame.Name()));
    function.VarintField(field::kFunctionSystemName,
                         strings.Index(frame.Name() + frame.descriptor));
    function.VarintField(field::kFunctionFilename, strings.Index(frame.class_name));
    out.BytesField(field::kFunction, function.bytes());
  }
  for (size_t f = 0; f < profile.frames().size(); f++) {
    ProtoWriter line;
    line.VarintField(field::kLineFunctionId, static_cast<int64_t>(function_of_frame[f]));
    // JFR's -1 ("no line") is pprof's 0 ("unknown"), which proto3 leaves out.
    line.VarintField(field::kLineLine, std::max(profile.frames()[f].line, 0));
    ProtoWriter location;
    location.VarintField(field::kLocationId, static_cast<int64_t>(f + 1));
    location.BytesField(field::kLocationLine, line.bytes());
    out.BytesField(field::kLocation, location.bytes());
  }

  for (const Sample& sample : profile.samples()) {
    ProtoWriter message;
    std::vector<uint64_t> locations;
    for (uint32_t frame : profile.stacks()[sample.stack]) locations.push_back(frame + 1);
    message.PackedField(field::kSampleLocationId, locations);  // leaf first, as pprof wants
    std::vector<uint64_t> values = {static_cast<uint64_t>(Profile::CountOf(sample))};
    for (const Measure& measure : measured) {
      values.push_back(measure.Holds(sample) ? static_cast<uint64_t>(profile.MeasureOf(sample))
                                             : 0);
    }
    message.PackedField(field::kSampleValue, values);
    for (const LabelSource& source : labels) {
      const std::string value = LabelValue(profile, sample, source);
      if (value.empty()) continue;
      ProtoWriter label;
      label.VarintField(field::kLabelKey, strings.Index(source.key));
      if (source.kind == LabelSource::kThreadId) {
        label.VarintField(field::kLabelNum, strtoll(value.c_str(), nullptr, 10));
      } else {
        label.VarintField(field::kLabelStr, strings.Index(value));
      }
      message.BytesField(field::kSampleLabel, label.bytes());
    }
    out.BytesField(field::kSample, message.bytes());
  }
  out.VarintField(field::kTimeNanos, profile.start_nanos());
  out.VarintField(field::kDurationNanos, profile.duration_nanos());
  if (!measured.empty() && profile.period(measured.front().kind) > 0) {
    const Measure& measure = measured.front();
    out.BytesField(field::kPeriodType, ValueType(&strings, measure.name, measure.unit));
    out.VarintField(field::kPeriod, profile.period(measure.kind));
  }
  // One measure loaded: it; several: the count, in which every sample has its weight.
  const bool one_kind = loaded.size() == 1 && measured.size() == 1;
  out.VarintField(field::kDefaultSampleType,
                  strings.Index(one_kind ? measured.front().name : "samples"));
  // Last: every string above has been interned by now.
  for (const std::string& text : strings.strings()) out.AlwaysBytesField(field::kStringTable, text);
  return out.bytes();
}

}  // namespace ctxprof::tools
