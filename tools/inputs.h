// Inputs of the analysis commands (report, flame, convert): which recording files to read, in
// which order.
//
// Each argument is a JFR file, or a folder whose *.jfr files are read: a repository (ctxprof's
// repository= or the JDK's), one chunk file per chunk. Files are read oldest first, ordered by
// the start time in their first chunk header (then by path), so that the newest file, whose
// last chunk tells whether the recording was finished, comes last (profiler/export/profile.h). An
// empty file (a recording whose writer has not published its first chunk yet) is skipped with a
// note.
//
// Thread safety: a pure function of the file system.
#ifndef CTXPROF_TOOLS_INPUTS_H_
#define CTXPROF_TOOLS_INPUTS_H_

#include <string>
#include <vector>

namespace ctxprof::tools {

// Fills *files with the recordings `arguments` name, oldest first, and *notes with one line per
// skipped empty file. False with *error naming the argument when one cannot be read, a folder
// holds no .jfr file, or nothing is left to read.
bool ExpandInputs(const std::vector<std::string>& arguments, std::vector<std::string>* files,
                  std::vector<std::string>* notes, std::string* error);

}  // namespace ctxprof::tools

#endif  // CTXPROF_TOOLS_INPUTS_H_
