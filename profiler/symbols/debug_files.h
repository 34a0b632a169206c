// Separate debug files: where the full symbol table (.symtab) of a stripped object lives when a
// debug package is installed (Debian's libc6-dbg, the -dbgsym packages, `objcopy
// --only-keep-debug`). Background thread only.
//
// Searched as GDB does, which is where those packages install them (`root` = /usr/lib/debug):
//   1. by build id, the object's NT_GNU_BUILD_ID note as hex, first byte apart:
//      <root>/.build-id/93/ac61ec5a8eb1396f9fbd350e3169a558528a40.debug
//   2. by the object's .gnu_debuglink name, next to it, in .debug/ beside it, and under root
//      with the object's folder: <dir>/<name>, <dir>/.debug/<name>, <root><dir>/<name>.
// A candidate is used only if it is the object's: its build id equals the object's, or, for an
// object without a build id, the CRC-32 of its contents equals the one in .gnu_debuglink. A
// stale debug file (left from another version of the package) is so never used.
//
// Thread safety: a pure function of the file system.
#ifndef CTXPROF_PROFILER_SYMBOLS_DEBUG_FILES_H_
#define CTXPROF_PROFILER_SYMBOLS_DEBUG_FILES_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "profiler/symbols/elf_symbols.h"

namespace ctxprof {

inline constexpr char kDebugFileRoot[] = "/usr/lib/debug";

// The debug file of `object` (the image of the file at `path`), or null when none is installed.
std::unique_ptr<ElfImage> OpenDebugFile(const ElfImage& object, const std::string& path,
                                        const std::string& root = kDebugFileRoot);

// CRC-32 (the IEEE 802.3 polynomial, as .gnu_debuglink and zlib use it) of `size` bytes.
uint32_t DebugLinkCrc(const char* data, size_t size);

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SYMBOLS_DEBUG_FILES_H_
