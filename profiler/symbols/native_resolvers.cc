#include "profiler/symbols/native_resolvers.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

#include "profiler/jfr/native_method.h"

namespace ctxprof {

void NativeFrameResolver::Resolve(const RawFrame& frame, ResolvedFrame* out) {
  const bool return_address = frame.bci == kNativeReturnAddress;
  if (frame.kind == FrameKind::kKernel) {
    out->method_name = symbolizer_.ResolveKernel(frame.id, return_address);
    out->descriptor = kWholeSymbolDescriptor;
    out->class_name = "[kernel]";
    out->type = JfrFrameType::kKernel;
    return;
  }
  // A C++ symbol's parameters go to the descriptor, for the JDK's tools (native_method.h).
  SplitNativeSymbol(symbolizer_.Resolve(frame.id, return_address), &out->method_name,
                    &out->descriptor);
  out->class_name = symbolizer_.ModuleName(frame.id);
  if (out->class_name.empty()) out->class_name = "[unknown]";
  out->type = JfrFrameType::kNative;
}

void NativeThreadResolver::Resolve(int32_t tid, ResolvedThread* out) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/task/%d/comm", tid);
  char name[64] = {};
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  ssize_t length = fd >= 0 ? read(fd, name, sizeof(name) - 1) : -1;
  if (fd >= 0) close(fd);
  while (length > 0 && (name[length - 1] == '\n' || name[length - 1] == '\0')) length--;
  out->name = length > 0 ? std::string(name, length) : "thread-" + std::to_string(tid);
}

}  // namespace ctxprof
