// JavaFrameTypes: which of AsyncGetCallTrace's frames ran in the interpreter, which as JIT
// compiled code, and which were inlined into a compiled caller, read from the VM's own
// structures (jni/java_stack_walker.h calls it on every walked stack).
//
// ASGCT reports one frame per Java activation (a "virtual frame"): a compiled method with
// methods inlined into it appears as several frames that share one physical frame on the
// stack, and nothing in ASGCT's output says which frames those are. Assign() walks the physical
// frames ASGCT walked, from the same start (the thread's last-Java-frame anchor when it is
// walkable, else the signal's registers; HotSpot forte.cpp), and learns from the VM how many of
// ASGCT's frames each physical frame accounts for:
//   * its pc is in the interpreter's code blob ("Interpreter"): one frame, Interpreted;
//   * its pc is in an nmethod: one frame per scope of the nmethod's debug information at that
//     pc (the PcDesc ASGCT itself would use, then the ScopeDesc sender chain); the inner scopes
//     are Inlined, the outermost one is the nmethod's own method, JIT compiled;
//   * its pc is in a native method's compiled wrapper ("native nmethod"): one frame (ASGCT
//     marks it a native method, lineno -3);
//   * other code blobs (stubs, adapters) hold no Java frame and are stepped over by their frame
//     size; the call stub's entry frame continues at the Java frames before the VM call
//     (JavaCallWrapper's anchor); code outside the code cache (a C function called from Java
//     without an anchor) is stepped over by its frame-pointer link, before the first Java frame
//     only.
// Each physical frame is checked against ASGCT's frames before its types are written: its
// Method* (interpreted: the frame's method slot; compiled: nmethod::_method) must be the Method*
// behind the jmethodID ASGCT reported for the frame that ends the physical frame's run. The first
// disagreement ends the typing: this walk could not follow the stack there (a stub it steps over
// wrongly, a continuation's return barrier, a deoptimised frame whose return address points at
// the deoptimisation handler). Frames from there on keep the kind the caller gave them, and
// Assign returns how many frames it typed. A jmethodID is a pointer to the Method* on JDK 17-25.
//
// Walk goes along the same physical frames and writes the frames ASGCT would report itself, as
// forte.cpp's vframe stream builds them: an interpreted frame's method and the bci of its
// bytecode pointer (0 outside the bytecodes); a compiled frame's scopes from the PcDesc above,
// each scope's method from the nmethod's metadata and its bci from the scope stream (sender
// offset, metadata index, bci + 1); a native wrapper's method; every Method* turned into its
// jmethodID through its class's jmethodID array (ConstMethod::_method_idnum), and a native
// method marked as ASGCT marks it. Nothing is trusted that the VM did not confirm: a jmethodID
// whose slot does not hold the Method* ends the walk, and so does any frame this walk cannot
// follow; the caller then asks ASGCT. A lock-free table caches jmethodIDs by Method* (every hit
// verified the same way). What ASGCT itself stops at (a sender its frame::safe_for_sender
// refuses), this walk may follow further when every frame verifies.
//
// Layout: every offset comes from the VM's tables (vm_structs.h), resolved once by Init() off
// the signal path, for the nmethod layout of JDK 17 and 21 (pc descriptors at offsets from the
// nmethod up to _dependencies_offset, scope data at CompiledMethod::_scopes_data_begin, code at
// CodeBlob::_code_begin) and of JDK 25 (both in nmethod::_immutable_data; code at
// CodeBlob::_code_offset). The scope stream's UNSIGNED5 integers exclude the zero byte since
// JDK 20 (JDK-8292758). What the tables do not list is fixed by the platform's frame layout
// (x86-64 and AArch64 alike, JDK 9 and later): a frame's saved frame pointer at fp[0] and return
// address at fp[1], a compiled frame's return address and saved fp just below the caller's sp,
// the interpreter frame's Method* at fp[-3], its bytecode pointer at fp[-8] (fp[-9] on AArch64).
// Walk also needs the metadata array: at nmethod::_metadata_offset up to JDK 21, after the
// relocations in CodeBlob::_mutable_data since JDK 25; on JDK 22-24 (neither layout) it declines
// every stack, and so it does on JDK 19-21, which have virtual threads but do not export
// JavaThread::_cont_entry to tell a mounted one.
//
// Safety: Assign and Walk run in the signal handler on the interrupted thread. Every read of VM or
// stack memory happens inside one FaultGuard::Run (a fault ends the typing where it is); it
// allocates nothing, takes no lock, loops a bounded number of times (every stack step must move the
// stack pointer up, by less than 16 MiB), and reads the layout only after Init's release store made
// it visible (acquire load in Assign).
//
// Thread safety: Init is called off the signal path and serialised by the caller (JVM agent
// initialisation); Assign and Walk may run on any thread at any time.
#ifndef CTXPROF_JNI_JAVA_FRAME_TYPES_H_
#define CTXPROF_JNI_JAVA_FRAME_TYPES_H_

#include <jni.h>

#include <string>

#include "profiler/sampler/sample.h"

namespace ctxprof {

class JavaFrameTypes {
 public:
  // Resolves the layout from the VM's tables. Needs the code cache, so call it once the VM is
  // initialised (VMInit, or later for a dynamic attach); `jni` is any JNIEnv of the VM. False
  // with *error naming what the VM lacks; Assign and Walk then do nothing. True with *walk_error
  // set when only Walk lacks something (it then declines every stack). Idempotent once it
  // succeeded.
  static bool Init(JNIEnv* jni, std::string* error, std::string* walk_error);

  // Sets the kind of frames[0..count), ASGCT's frames already converted in place (id =
  // jmethodID, bci = its lineno), as the VM says; `java_thread` is the interrupted thread's
  // JavaThread (java_thread_env.h) and `ucontext` the context ASGCT was given. Returns how many
  // leading frames it typed; the others are left as they were. Async-signal-safe.
  static int Assign(const char* java_thread, const void* ucontext, RawFrame* frames, int count);

  // Walks the Java frames itself, from the same start as Assign, into frames[0..max_depth) as
  // ASGCT's frames would be after JavaStackWalker::Walk's conversion, kinds included; returns
  // their count, or 0 when it declines the stack (the caller then asks ASGCT). It declines
  // whenever it cannot vouch for every frame: a frame it cannot follow, a method whose jmethodID
  // does not lead back to it, an initial interpreted frame in Java code (ASGCT validates those
  // in ways this walk does not), an initial compiled frame or stub interrupted before its frame
  // is complete, a mounted virtual thread. A compiled frame interrupted in its epilogue (frame
  // popped, `ret` not yet taken) is not recognised; the check mode has found no stack where
  // ASGCT did better there (docs/JAVA.md).
  // Async-signal-safe.
  //
  // `ucontext` is either the interrupted context (kInterrupted), or one JavaStackWalker built
  // one frame up from code ASGCT could not walk (a stub such as an intrinsic), whose pc is that
  // call's return address (kReturnAddress). The initial compiled frame's scopes are then those
  // of the PcDesc at the return address, or the first after it when the call recorded none:
  // the call site, where ASGCT, which takes every initial pc as interrupted, starts looking one
  // byte later and names the next PcDesc's scopes (often an inlined method after the call).
  enum class Start { kInterrupted, kReturnAddress };
  static int Walk(const char* java_thread, const void* ucontext, RawFrame* frames, int max_depth,
                  Start start = Start::kInterrupted);

  // True when `pc` is in the VM's code cache (the interpreter, compiled Java code, stubs and
  // adapters): where a native walk meets the Java frames. Compares with the code heaps' reserved
  // bounds only (fixed for the VM's life); false before Init succeeded. Async-signal-safe; a
  // JavaCodeProbe (profiler/sampler/signal_handler.h).
  static bool InCodeCache(uint64_t pc);
  // True when `pc` is in code the VM generated outside Java methods and the interpreter (a
  // stub: StubRoutines, adapters, runtime stubs), found in the code heaps' segment maps.
  // Async-signal-safe (fault-guarded reads); false before Init succeeded.
  static bool InStub(uint64_t pc);
};

}  // namespace ctxprof

#endif  // CTXPROF_JNI_JAVA_FRAME_TYPES_H_
