// pprof output: a gzipped perftools.profiles.Profile (the published schema,
// github.com/google/pprof proto/profile.proto; not in this repository), encoded with ProtoWriter.
//
// Sample types: "samples"/"count" (every sample: its weight in sampling intervals; every
// allocation or lock event: 1), then one per kind loaded (profile.h), named after it, in its
// measure's unit: "cpu"/"nanoseconds" (weight x CPU interval, CPU samples; 0 for the others)
// when the recording gives the CPU interval, "wall"/"nanoseconds" (weight x wall interval)
// likewise; with --events alloc "alloc"/"bytes" (each allocation sample's weight), with --events
// lock "monitor"/"nanoseconds" and "park"/"nanoseconds" (each wait's duration).
// default_sample_type — what pprof and speedscope show first — is the one kind's measure when
// only one kind was loaded, else "samples", so every sample shows by default. period_type/period:
// the first measured kind's interval (CPU, else wall, else the allocation sampling interval in
// bytes; none for lock waits). time_nanos/duration_nanos: the recording's time range from its
// chunk headers.
//
// Labels per sample: the LabelSource list (labels.h; default "kind" — "cpu", "wall", "alloc",
// "monitor" or "park" — and the context attributes:
// no trace, span or thread ids unless asked for), string labels except thread_id (numeric).
// One function per distinct (class.method, descriptor) — name "class.method", system_name adds
// the descriptor, filename the class — and one location per distinct frame (function + line;
// no line, as pprof writes an unknown line, for frames without one: native code, native methods).
#ifndef CTXPROF_TOOLS_PPROF_H_
#define CTXPROF_TOOLS_PPROF_H_

#include <string>
#include <vector>

#include "profiler/export/labels.h"
#include "profiler/export/profile.h"

namespace ctxprof::tools {

// The uncompressed Profile message of `profile`.
std::string EncodePprof(const Profile& profile, const std::vector<LabelSource>& labels);

}  // namespace ctxprof::tools

#endif  // CTXPROF_TOOLS_PPROF_H_
