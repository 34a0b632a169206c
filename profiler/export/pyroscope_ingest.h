// PyroscopeIngest: the request that hands one finished JFR chunk to a Pyroscope server, as its
// HTTP API documents it (docs/sources/reference-server-api, "JFR format" and "JFR with labels")
// and its ingest handler reads it (pkg/ingester/pyroscope, pkg/og/convert/jfr):
//
//   POST <prefix>/ingest?name=<app{k=v,...}>&from=<ms>&until=<ms>&sampleRate=<Hz>
//        &spyName=ctxprof&format=jfr
//   Content-Type: multipart/form-data; boundary=<boundary>
//   part "jfr"    (filename "jfr", application/octet-stream): the chunk file, gzipped
//   part "labels" (filename "labels", application/x-protobuf): a LabelsSnapshot, gzipped;
//                 left out when the chunk has no context
//
// LabelsSnapshot (the message Pyroscope's jfr-parser defines: contexts = 1, map<int64,
// Context>; strings = 2, map<int64, string>; Context.labels = 1, map<int64, int64>): each
// contextId the chunk's sample events carry maps to its labels, names and values as string ids
// (from 1, per snapshot). Labels are the attributes under their JFR field names, and trace_id /
// span_id, which Pyroscope keeps on samples but never makes series labels.
//
// from/until are milliseconds since the epoch (13 digits: Pyroscope reads them as such);
// sampleRate makes Pyroscope's values nanoseconds (count x 1e9 / sampleRate).
//
// Thread safety: pure functions.
#ifndef CTXPROF_PROFILER_EXPORT_PYROSCOPE_INGEST_H_
#define CTXPROF_PROFILER_EXPORT_PYROSCOPE_INGEST_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "profiler/export/finished_chunk.h"

namespace ctxprof {

// "app{k=v,...}" (or "app" without labels) for the `name` parameter.
std::string PyroscopeName(const std::string& application,
                          const std::vector<std::pair<std::string, std::string>>& labels);

// The request target: "<prefix>/ingest?..." with every value percent-encoded.
std::string PyroscopeIngestTarget(const std::string& path_prefix, const std::string& name,
                                  int64_t from_nanos, int64_t until_nanos, uint64_t sample_rate_hz);

// The LabelsSnapshot message for `contexts` (empty when there are none).
std::string PyroscopeLabelsSnapshot(const std::vector<FinishedChunk::Context>& contexts);

// The multipart/form-data body with the "jfr" part and, when `labels` is not empty, the
// "labels" part (both already gzipped), delimited by `boundary`.
std::string PyroscopeMultipartBody(const std::string& boundary, const std::string& jfr,
                                   const std::string& labels);

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_EXPORT_PYROSCOPE_INGEST_H_
