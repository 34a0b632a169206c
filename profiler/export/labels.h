// Labels: which per-sample labels (pprof) or attributes (OTLP) a conversion writes, chosen with
// `--labels` (docs/TOOLS.md).
//
// Names: "kind" (cpu|wall), "thread" (the thread's name), "thread_id" (OS thread id, numeric),
// "trace_id", "span_id", and the recording's attribute names (as registered, "http.route", or
// as JFR fields, "http_route"). The default is "kind" plus every attribute: trace and span ids
// and thread ids make each request or thread its own series in Pyroscope and most backends, so
// they come only when asked for ("--labels kind,endpoint,trace_id"); "--labels none" writes no
// labels.
#ifndef CTXPROF_PROFILER_EXPORT_LABELS_H_
#define CTXPROF_PROFILER_EXPORT_LABELS_H_

#include <string>
#include <vector>

#include "profiler/export/profile.h"

namespace ctxprof {

struct LabelSource {
  enum Kind { kSampleKind, kThreadName, kThreadId, kTraceId, kSpanId, kAttribute };
  Kind kind;
  std::string key;     // the label's key as written
  int attribute = -1;  // kAttribute: index into Profile::attribute_names()
};

// "kind" and every attribute of `profile`.
std::vector<LabelSource> DefaultLabels(const Profile& profile);

// Parses a comma-separated --labels list (or "none"). False + *error naming the unknown name and
// the names available in `profile`.
bool ParseLabels(const std::string& text, const Profile& profile, std::vector<LabelSource>* out,
                 std::string* error);

// The text of label `source` for `sample` ("" = the sample has no such value; thread_id as
// decimal digits).
std::string LabelValue(const Profile& profile, const Sample& sample, const LabelSource& source);

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_EXPORT_LABELS_H_
