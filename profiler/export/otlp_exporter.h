// OtlpConfigFromOptions, the otlp= exporter's configuration: otlp= sends each finished chunk file
// of a repository to an OpenTelemetry collector as OTLP/HTTP profiles, through the Uploader
// (uploader.h: the same bounded queue, retries with backoff, drop counting and stop bound as
// upload=).
//
// Request: POST <endpoint path>, Content-Type application/x-protobuf, Content-Encoding gzip, body
// an ExportProfilesServiceRequest: the chunk as `ctxprof convert --to otlp` writes it
// (otlp_profile.h, default labels: "kind" and the context attributes as sample attributes, the
// trace and span ids as links; one profile per kind present: cpu, wall, alloc, monitor, park)
// with the resource attributes below. Retried: network errors and HTTP 429, 502, 503, 504
// (the OTLP spec's retryable statuses), after the Retry-After delay when one is sent; any other
// status drops the chunk at once. A 200 whose partial_success rejects profiles or carries a
// message is counted as sent and its message printed ("ctxprof: otlp: <chunk>: ...").
//
// Endpoint: otlp=URL is the collector's base URL, /v1development/profiles appended to its path.
// otlp=env takes OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT as is (no path = "/"), else
// OTEL_EXPORTER_OTLP_ENDPOINT with /v1development/profiles appended, else
// http://localhost:4318/v1development/profiles. Headers: OTEL_EXPORTER_OTLP_HEADERS, then
// OTEL_EXPORTER_OTLP_PROFILES_HEADERS (its keys win), "k=v,k=v" percent-decoded, with either
// form of otlp=; their values are secrets: a malformed list is reported by the variable's name
// and the item's position only. Resource: OTEL_RESOURCE_ATTRIBUTES ("k=v,k=v", percent-decoded;
// on a decoding error the whole variable is ignored, with a notice), service.name from
// OTEL_SERVICE_NAME (it wins), else the variable's, else "unknown_service:<executable>";
// process.pid, telemetry.sdk.name = "ctxprof" and telemetry.sdk.version are added unless given.
// https: the CA file of OTEL_EXPORTER_OTLP_PROFILES_CERTIFICATE, else
// OTEL_EXPORTER_OTLP_CERTIFICATE, else the system's store. Request timeout:
// OTEL_EXPORTER_OTLP_PROFILES_TIMEOUT, else OTEL_EXPORTER_OTLP_TIMEOUT (milliseconds, 0 = none;
// a bad value: notice, 10 s).
// User-Agent: ctxprof-otlp-exporter/<version>. An empty variable counts as unset.
//
// Thread safety: OtlpConfigFromOptions reads the environment: call it from one thread at the
// session's start; the request maker it returns is called on the uploader's thread only.
#ifndef CTXPROF_PROFILER_EXPORT_OTLP_EXPORTER_H_
#define CTXPROF_PROFILER_EXPORT_OTLP_EXPORTER_H_

#include <string>
#include <vector>

#include "profiler/base/status.h"
#include "profiler/export/otlp_profile.h"
#include "profiler/export/uploader.h"
#include "profiler/options.h"

namespace ctxprof {

// The uploader configuration for options.otlp (url set). kInvalidArgument naming the option
// or the variable at fault (never a header's value).
StatusOr<UploaderConfig> OtlpConfigFromOptions(const Options& options);

// The resource attributes above, from the environment (also what otelcontext=true publishes as
// the OpenTelemetry process context). A notice "<option>: OTEL_RESOURCE_ATTRIBUTES ignored: ..."
// when that variable is malformed.
std::vector<ResourceAttribute> OtelResourceAttributes(const std::string& option);

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_EXPORT_OTLP_EXPORTER_H_
