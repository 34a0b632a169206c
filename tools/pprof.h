// pprof output: a gzipped perftools.profiles.Profile (the published schema,
// github.com/google/pprof proto/profile.proto; not in this repository), encoded by hand (the few
// message types it needs) and compressed with zlib.
//
// Sample types: "samples"/"count" (sum of weights) and, when the recording's
// ctxprof.ProfilerSettings gives an interval and CPU samples were loaded, "cpu"/"nanoseconds" =
// weight x interval for CPU samples (0 for wall samples: recordings do not carry the wall
// interval). Allocations (--events alloc): "alloc_samples"/"count" and "alloc_space"/"bytes";
// lock waits (--events lock): "contentions"/"count" and "delay"/"nanoseconds" (the names Go's
// heap and mutex profiles use). Labels per sample: "kind" = "cpu"|"wall"|"alloc"|"monitor"|
// "park", "thread_id" (numeric), and from the context
// "trace_id", "span_id" and one label per set attribute under its registered name. One function per
// distinct (class.method, descriptor) — name "class.method", system_name adds the descriptor,
// filename the class — and one location per distinct frame (function + line).
#ifndef CTXPROF_TOOLS_PPROF_H_
#define CTXPROF_TOOLS_PPROF_H_

#include <string>

#include "tools/profile.h"

namespace ctxprof::tools {

// The uncompressed Profile message of `profile`.
std::string EncodePprof(const Profile& profile);

// gzip (RFC 1952) of `data`. False + *error if zlib fails.
bool Gzip(const std::string& data, std::string* out, std::string* error);

}  // namespace ctxprof::tools

#endif  // CTXPROF_TOOLS_PPROF_H_
