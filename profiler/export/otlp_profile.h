// OTLP profiles output: an opentelemetry.proto.profiles.v1development.ProfilesData message
// (opentelemetry-proto v1.10+; not in this repository), encoded with ProtoWriter. Its field
// numbers are those of ExportProfilesServiceRequest, so the file is also a valid request body for
// POST /v1development/profiles.
//
// One ResourceProfiles (with the given resource attributes) with one ScopeProfiles (scope
// "ctxprof") holding one Profile per sample kind present (profile.h): "cpu" and "wall", or "alloc",
// or "monitor" and "park". Each Profile, in the OpenTelemetry profiler's conventions: sample_type
// ("samples", "count") for cpu and wall, (kind, MeasureUnit) for the event kinds ("alloc"/"bytes",
// "monitor"/"nanoseconds"...), period_type (kind, its unit) and period = the sampling interval when
// the recording gives it (none for lock waits), time_unix_nano/duration_nano = the recording's
// range. A Sample is one distinct (stack, attributes, link); it lists the time of each of its
// events in timestamps_unix_nano: for cpu and wall a time once per sampling interval the event
// stands for (the spec counts each timestamp as 1 when there are no values), so weights add up
// without a values list; for the event kinds one time per event and, in values, its bytes or
// nanoseconds.
//
// Context: the LabelSource list (labels.h; default: the context attributes) becomes sample
// attributes (string values); the trace and span ids become the sample's Link (16 and 8 bytes;
// an absent id is zero bytes). The dictionary is shared by all profiles; every table starts with
// its zero entry as the spec requires, and functions ("class.method", system name with the
// descriptor of a Java method; native frames have none), locations (one Line; no line number
// for frames without one) and stacks (leaf first) are deduplicated and hold only what samples
// use. Locations carry the attribute "profile.frame.type" = "jvm",
// "native" or "kernel".
#ifndef CTXPROF_PROFILER_EXPORT_OTLP_PROFILE_H_
#define CTXPROF_PROFILER_EXPORT_OTLP_PROFILE_H_

#include <string>
#include <utility>
#include <vector>

#include "profiler/export/labels.h"
#include "profiler/export/profile.h"

namespace ctxprof {

// A resource attribute (string-valued), e.g. {"service.name", "checkout"}.
using ResourceAttribute = std::pair<std::string, std::string>;

// The ProfilesData message of `profile` (not compressed). `resource` (when not empty) becomes
// the ResourceProfiles' Resource, its attributes as plain KeyValue strings (readable by
// receivers older than proto v1.10).
std::string EncodeOtlp(const Profile& profile, const std::vector<LabelSource>& labels,
                       const std::vector<ResourceAttribute>& resource = {});

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_EXPORT_OTLP_PROFILE_H_
