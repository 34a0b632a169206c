// VmStackWalker: the interrupted thread's Java frames read from the VM's own structures, in the
// signal handler (JavaStackWalker, java_stack_walker.h, asks it first and falls back to ASGCT).
// It follows the physical frames ASGCT would, from the same start (the thread's last-Java-frame
// anchor when it is walkable, else the signal's registers), through the typed views of
// vm_views.h, and either writes the frames ASGCT would report (Walk) or says which of ASGCT's
// frames ran interpreted, JIT compiled or inlined (AssignKinds). The runtime events' callbacks
// (jvm_events.h) ask it too, for a thread stopped in the VM, in place of JVMTI GetStackTrace
// (WalkStopped). How it follows the stack, and what it declines: docs/JAVA.md ("The VM's own
// walk first", "Frame types", "Allocation and lock events").
//
// Nothing is trusted that the VM did not confirm: every physical frame's Method* must lead to
// the jmethodID reported for it, and the first frame that does not ends the walk.
//
// Why a reader cannot crash: AssignKinds and the walks run every read of VM or stack memory
// inside one FaultGuard::Run (a fault ends the walk where it is); they allocate nothing, take no
// lock and loop a bounded number of times (every step must move the stack pointer up, by less
// than 16 MiB). They read the layout only after Init published it: Init writes it, then sets the
// ready flag with a release store; readers load the flag with acquire before the layout.
// The walks keep the frames they decoded for a compiled frame in a lock-free cache keyed by pc,
// how the pc was looked up and compilation; its entries are seqlocks, so a reader uses an entry
// only when no writer touched it meanwhile (vm_stack_walker.cc), and a writer that finds it busy
// skips it.
//
// Thread safety: Init runs off the signal path, serialised by the caller (JVM agent
// initialisation); the others may run on any thread at any time, signal handlers included.
#ifndef CTXPROF_JNI_VM_STACK_WALKER_H_
#define CTXPROF_JNI_VM_STACK_WALKER_H_

#include <jni.h>

#include <cstdint>

#include "profiler/base/status.h"
#include "profiler/sampler/sample.h"

namespace ctxprof {

class VmStackWalker {
 public:
  // What Init found the walks can do in this VM.
  struct Capabilities {
    Status walk;  // ok, or why Walk declines every stack (AssignKinds works either way)
  };
  // Resolves the layout (vm_layout.h); call once the VM is initialised (VMInit, or later for a
  // dynamic attach); `jni` is any JNIEnv of the VM. Fails (kUnavailable, naming what the VM
  // lacks) when it cannot: AssignKinds and the walks then do nothing. Idempotent once it succeeded.
  static StatusOr<Capabilities> Init(JNIEnv* jni);

  // Sets the kind of frames[0..count), ASGCT's frames already converted in place (id =
  // jmethodID, bci = its lineno), as the VM says; `java_thread` is the interrupted thread's
  // JavaThread (java_thread_env.h) and `ucontext` the context ASGCT was given. Returns how many
  // leading frames it typed; the others are left as they were.
  static int AssignKinds(const char* java_thread, const void* ucontext, RawFrame* frames,
                         int count);

  // The code-cache blob at a pc (Locate), looked up once per signal: JavaStackWalker asks
  // whether the interrupted pc is a stub, then hands it to Walk, which does not look it up again.
  struct CodeAt {
    uint64_t pc = 0;
    uint64_t blob = 0;  // the blob's start; 0 outside a live blob
    uint8_t kind = 0;   // a CodeKind (vm_views.h)
    bool in_stub() const;
  };
  // What the code cache holds at `pc`; the kind is "outside the code cache" before Init
  // succeeded.
  static CodeAt Locate(uint64_t pc);

  // Where Walk's `ucontext` points: the interrupted context, or one JavaStackWalker built one
  // frame up from code ASGCT could not walk (a stub), whose pc is that call's return address.
  // The initial compiled frame's scopes are then those of the call site.
  enum class Start { kInterrupted, kReturnAddress };
  static constexpr int kNoJavaFrames = -1;
  // Writes the Java frames into frames[0..max_depth) as ASGCT's would be after JavaStackWalker's
  // conversion, kinds included; returns their count, kNoJavaFrames when the thread has none
  // (outside Java code without a last Java frame: ASGCT reports none either), or 0 when it
  // cannot vouch for every frame (the caller then asks ASGCT). WalkStopped never returns
  // kNoJavaFrames. `leaf`, when not null, is Locate's answer for the context's
  // pc, used in place of a second lookup of it.
  static int Walk(const char* java_thread, const void* ucontext, RawFrame* frames, int max_depth,
                  Start start = Start::kInterrupted, const CodeAt* leaf = nullptr);
  // The Java frames of a thread stopped in the VM at its walkable last-Java-frame anchor (a JVMTI
  // event callback, a JNI native method: `java_thread` is the calling thread's) as JVMTI
  // GetStackTrace reports them: the same frames as Walk, but every compiled frame's pc is a
  // call's return address, looked up exactly, and the kinds are the VM's. Returns their count,
  // or 0 when it cannot vouch for every frame (the caller then asks JVMTI).
  static int WalkStopped(const char* java_thread, RawFrame* frames, int max_depth);

  // True when `pc` is in the VM's code cache (interpreter, compiled code, stubs, adapters), by
  // the code heaps' reserved bounds only; false before Init succeeded. A JavaCodeProbe
  // (profiler/sampler/signal_handler.h).
  static bool InCodeCache(uint64_t pc);

 private:
  // Walk (`ucontext` set) and WalkStopped (null).
  static int WalkFrom(const char* java_thread, const void* ucontext, Start start,
                      const CodeAt* leaf, RawFrame* frames, int max_depth);
};

}  // namespace ctxprof

#endif  // CTXPROF_JNI_VM_STACK_WALKER_H_
