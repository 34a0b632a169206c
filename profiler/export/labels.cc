#include "profiler/export/labels.h"

namespace ctxprof {

std::vector<LabelSource> DefaultLabels(const Profile& profile) {
  std::vector<LabelSource> labels = {{LabelSource::kSampleKind, "kind"}};
  for (size_t a = 0; a < profile.attribute_names().size(); a++) {
    labels.push_back({LabelSource::kAttribute, profile.attribute_names()[a], static_cast<int>(a)});
  }
  return labels;
}

bool ParseLabels(const std::string& text, const Profile& profile, std::vector<LabelSource>* out,
                 std::string* error) {
  std::vector<LabelSource> labels;
  if (text == "none") {
    *out = labels;
    return true;
  }
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string name = text.substr(start, comma == std::string::npos ? comma : comma - start);
    if (name == "kind") {
      labels.push_back({LabelSource::kSampleKind, name});
    } else if (name == "thread") {
      labels.push_back({LabelSource::kThreadName, name});
    } else if (name == "thread_id") {
      labels.push_back({LabelSource::kThreadId, name});
    } else if (name == "trace_id") {
      labels.push_back({LabelSource::kTraceId, name});
    } else if (name == "span_id") {
      labels.push_back({LabelSource::kSpanId, name});
    } else if (const int attribute = profile.AttributeIndex(name); attribute >= 0) {
      labels.push_back({LabelSource::kAttribute, profile.attribute_names()[attribute], attribute});
    } else {
      std::string known = "kind, thread, thread_id, trace_id, span_id";
      for (const std::string& attribute_name : profile.attribute_names()) {
        known += ", " + attribute_name;
      }
      *error = "--labels: \"" + name + "\" is not a label of this recording (labels: " + known +
               "; or none)";
      return false;
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  *out = std::move(labels);
  return true;
}

std::string LabelValue(const Profile& profile, const Sample& sample, const LabelSource& source) {
  switch (source.kind) {
    case LabelSource::kSampleKind:
      return sample.kind == SampleKind::kEvent ? profile.event_types()[sample.event_type].name
                                               : SampleKindName(sample.kind);
    case LabelSource::kThreadName:
      return profile.threads()[sample.thread].name;
    case LabelSource::kThreadId:
      return std::to_string(sample.thread_id);
    case LabelSource::kTraceId:
      return sample.context < 0 ? "" : profile.contexts()[sample.context].trace_id;
    case LabelSource::kSpanId:
      return sample.context < 0 ? "" : profile.contexts()[sample.context].span_id;
    case LabelSource::kAttribute:
      return profile.ValueOf(sample, source.attribute);
  }
  return "";
}

}  // namespace ctxprof
