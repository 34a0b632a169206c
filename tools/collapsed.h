// Collapsed ("folded") stacks, the input of flamegraph.pl, speedscope and async-profiler's
// converters: one line per distinct stack, frames root first, separated by ';', then a space
// and the sample count (sum of weights):
//
//   [http.route=/api/v1/orders];[tenant-id=acme];com.example.Main.main;com.example.Handler.run 12
//
// A sample with context starts with one frame per set attribute, "[name=value]", in the
// recording's attribute order (trace and span ids are left out: one stack per request would
// defeat aggregation); a sample without context has no such frames. In names and values,
// '%', ';', ' ', '[', ']', '=' and bytes below 0x20 or 0x7f are written as %XX (uppercase hex),
// so a line always splits unambiguously at ';' and at its last space and decodes exactly.
// A sample whose stack is empty (the stack walk found nothing) has the frame "[no frames]".
// Lines are sorted by byte order.
#ifndef CTXPROF_TOOLS_COLLAPSED_H_
#define CTXPROF_TOOLS_COLLAPSED_H_

#include <string>

#include "profiler/export/profile.h"

namespace ctxprof::tools {

// Appends the collapsed stacks of every sample of `profile` to *out.
void WriteCollapsed(const Profile& profile, std::string* out);

// `text` with the characters listed above percent-encoded.
std::string EscapeCollapsed(const std::string& text);

}  // namespace ctxprof::tools

#endif  // CTXPROF_TOOLS_COLLAPSED_H_
