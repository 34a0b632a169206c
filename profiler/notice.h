// Report: the one way libctxprof tells its user something nobody asked for: a single line
// "ctxprof: <message>" on stderr. The JVM agent prints its refusals, fallbacks and stop errors
// through it, and a session's background thread its first recording write error.
//
// Not async-signal-safe (stdio, allocation): never call it from a signal handler.
#ifndef CTXPROF_PROFILER_NOTICE_H_
#define CTXPROF_PROFILER_NOTICE_H_

#include <string>

namespace ctxprof {

// Writes "ctxprof: <message>\n" to stderr with one stdio call, so that lines from several
// threads do not interleave.
void PrintNotice(const std::string& message);

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_NOTICE_H_
