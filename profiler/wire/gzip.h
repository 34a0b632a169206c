// Gzip (RFC 1952) with zlib, for pprof files and upload bodies.
//
// Thread safety: a pure function; safe from any thread (not from a signal handler).
#ifndef CTXPROF_PROFILER_WIRE_GZIP_H_
#define CTXPROF_PROFILER_WIRE_GZIP_H_

#include <string>
#include <string_view>

#include "profiler/base/status.h"

namespace ctxprof {

// The gzip of `data` at zlib `level` (1 fastest .. 9 smallest); kUnavailable if zlib fails (it
// could not allocate its state).
StatusOr<std::string> Gzip(std::string_view data, int level);

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_WIRE_GZIP_H_
