// pprof output: a gzipped perftools.profiles.Profile (the published schema,
// github.com/google/pprof proto/profile.proto; not in this repository), encoded with ProtoWriter.
//
// Sample types: "samples"/"count" (sum of weights, every sample), then "cpu"/"nanoseconds"
// (weight x CPU interval, CPU samples; 0 for wall samples) when CPU samples were loaded and the
// recording gives the CPU interval, then "wall"/"nanoseconds" (weight x wall interval, wall
// samples) likewise. default_sample_type — what pprof and speedscope show first — is "cpu" or
// "wall" when only that kind was loaded, else "samples", so every sample shows by default.
// period_type/period: the CPU interval, else the wall interval. time_nanos/duration_nanos: the
// recording's time range from its chunk headers.
//
// Labels per sample: the LabelSource list (labels.h; default "kind" and the context attributes:
// no trace, span or thread ids unless asked for), string labels except thread_id (numeric).
// One function per distinct (class.method, descriptor) — name "class.method", system_name adds
// the descriptor, filename the class — and one location per distinct frame (function + line;
// no line, as pprof writes an unknown line, for frames without one: native code, native methods).
#ifndef CTXPROF_TOOLS_PPROF_H_
#define CTXPROF_TOOLS_PPROF_H_

#include <string>
#include <vector>

#include "tools/labels.h"
#include "tools/profile.h"

namespace ctxprof::tools {

// The uncompressed Profile message of `profile`.
std::string EncodePprof(const Profile& profile, const std::vector<LabelSource>& labels);

}  // namespace ctxprof::tools

#endif  // CTXPROF_TOOLS_PPROF_H_
