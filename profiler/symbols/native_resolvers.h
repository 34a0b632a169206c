// Resolvers for native programs: how the JFR writer names native frames and OS threads.
//
// NativeFrameResolver symbolizes instruction pointers with the Symbolizer (ELF .symtab and
// .dynsym, so static functions are named too, separate debug files, the vDSO) and reports the
// object file as the frame's "class" (e.g. "libc.so.6", "[vdso]", "[jit]"), typed Native; kernel
// frames are named from /proc/kallsyms, class "[kernel]", typed Kernel. NativeThreadResolver names
// a thread by /proc/self/task/<tid>/comm (a thread that has exited by then is called
// "thread-<tid>"). The JVM layer wraps these to add Java frames and Java thread names.
//
// Thread safety: none; the JFR writer calls resolvers from its one thread.
#ifndef CTXPROF_PROFILER_SYMBOLS_NATIVE_RESOLVERS_H_
#define CTXPROF_PROFILER_SYMBOLS_NATIVE_RESOLVERS_H_

#include "profiler/jfr_events/frame_resolver.h"
#include "profiler/symbols/symbolizer.h"

namespace ctxprof {

class NativeFrameResolver : public FrameResolver {
 public:
  // `frame.kind` must be FrameKind::kNative or kKernel. A leaf pc is looked up as is, every other
  // frame's pc as a return address; the writer resolves frames once per (pc, kind), so a pc seen
  // both as a leaf and as a caller is resolved as a caller (the difference matters only at a
  // function's very first byte).
  void Resolve(const RawFrame& frame, ResolvedFrame* out) override;
  // The symbols of every object mapped now (Symbolizer::LoadMappedObjects).
  void Preload() override { symbolizer_.LoadMappedObjects(); }

 private:
  Symbolizer symbolizer_;
};

class NativeThreadResolver : public ThreadResolver {
 public:
  void Resolve(int32_t tid, ResolvedThread* out) override;
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SYMBOLS_NATIVE_RESOLVERS_H_
