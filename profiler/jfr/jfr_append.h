// AppendRecording: one recording file made of two, the session's and the JDK's (jfrsync=,
// jni/jfr_sync.h): `path` is rewritten as its own chunks followed by the other files', and
// optionally without some of the records, chosen the way readers join events to spans (an event
// is in a span when its thread's osThreadId is the span's and its start lies in the span's
// [start, end), JfrReader::ContextAt): both files must count the same ticks.
//
//  * thresholds (select=if-context): the other file's events of a named type whose duration is
//    below the type's threshold and that fall in no span are left out;
//  * triggered (contexts=triggered): the spans (ctxprof.Context of `path`) in which no event that
//    stays falls, whichever file it came from, are left out.
//
// `path` is replaced through `path.tmp` and a rename, so it is whole at every moment; with a
// selection the joined file is read again, streaming (the spans of `path`'s own chunks kept,
// then one chunk at a time, each event's leading fields only: times and thread), and written
// once more. Memory: the spans, one chunk and the offsets left out.
//
// Thread safety: none needed; reads and writes only the given files.
#ifndef CTXPROF_PROFILER_JFR_JFR_APPEND_H_
#define CTXPROF_PROFILER_JFR_JFR_APPEND_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "profiler/base/status.h"

namespace ctxprof {

struct AppendSelection {
  // Event type name -> the duration in nanoseconds below which it is kept only inside spans.
  std::map<std::string, uint64_t> thresholds;
  bool triggered = false;
};

// kIo naming the file at fault (open, read, write, rename, or a file that is not whole chunks);
// kInvalidArgument from the reader for a joined file it cannot parse. `path` is as it was on
// failure of the first rewrite; a failed selection leaves it joined but unselected.
Status AppendRecording(const std::string& path, const std::vector<std::string>& others,
                       const AppendSelection& selection);

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_JFR_JFR_APPEND_H_
