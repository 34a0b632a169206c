// Gzip (RFC 1952) with zlib, for pprof files and upload bodies.
//
// Thread safety: a pure function; safe from any thread (not from a signal handler).
#ifndef CTXPROF_PROFILER_WIRE_GZIP_H_
#define CTXPROF_PROFILER_WIRE_GZIP_H_

#include <string>
#include <string_view>

namespace ctxprof {

// The gzip of `data` at zlib `level` (1 fastest .. 9 smallest). False + *error if zlib fails.
bool Gzip(std::string_view data, int level, std::string* out, std::string* error);

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_WIRE_GZIP_H_
