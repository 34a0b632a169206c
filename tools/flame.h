// `ctxprof flame`: one self-contained HTML page (inline CSS and JavaScript, no network
// resources) that draws an icicle graph (root on top) of the profile with DOM elements. The
// page's HTML, CSS and JavaScript are tools/flame.html, embedded at build time (tools/BUILD.bazel).
//
// The page holds the data as JSON in a <script type="application/json"> element: the unit of
// the counts ("samples", "bytes" for allocations, "ns" for lock waits), frame names, stacks (root
// first) and per (stack, group) counts, where the groups are the values of
// one attribute plus "(unset)" (context without that attribute) and "(no context)". The JSON is
// pure ASCII: non-ASCII is written as \uXXXX (invalid UTF-8 as U+FFFD), and '<', '>', '&' too,
// so no value can close the script element.
//
// In the page: a selector ("all", each group) picks the samples shown; a search box highlights
// frames whose name contains the text and shows the share of samples under them; a click on a
// frame zooms to it, "reset" zooms out. The URL fragment sets the initial state:
// "#by=<group label>" and "#search=<text>" (URI-encoded, joined with '&'), e.g.
// flame.html#by=%2Fcheckout&search=Handler. Frames narrower than 0.1% of the shown root are
// not drawn. Element ids for scripts and tests: #group (select), #search, #reset, #status
// (text: "<group>: N <unit>"), #matched, #graph (one div.frame per drawn frame, its text the
// frame name). Frames of one name and type are one node, whatever their line.
//
// A diff page (WriteDiffFlameGraph) holds two profiles, "before" and "after", with the groups
// of both. A frame's colour is the change of its share of the selected samples from before to
// after: red for growth, blue for shrinkage, white for none, scaled to the largest change on
// the page; its div.frame carries data-change (percentage points, two decimals) and its tooltip
// both counts. #widths sizes frames by the after (default) or the before profile, so frames
// that vanished can be seen too. #status reads "<group>: before N, after M <unit>".
#ifndef CTXPROF_TOOLS_FLAME_H_
#define CTXPROF_TOOLS_FLAME_H_

#include <string>

#include "profiler/export/profile.h"

namespace ctxprof::tools {

// Appends the page for `profile`, grouped by the attribute named `attribute` ("": the recording
// has none; then the groups are "(context)" and "(no context)"). `title` is shown in the page.
void WriteFlameGraph(const Profile& profile, const std::string& attribute, const std::string& title,
                     std::string* out);

// Appends a differential page: `after` against `before`, grouped as above in both.
void WriteDiffFlameGraph(const Profile& before, const Profile& after, const std::string& attribute,
                         const std::string& title, std::string* out);

// `text` (UTF-8) as an ASCII-only JSON string literal safe inside a <script> element.
std::string JsonStringForScript(const std::string& text);

}  // namespace ctxprof::tools

#endif  // CTXPROF_TOOLS_FLAME_H_
