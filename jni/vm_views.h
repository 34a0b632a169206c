// Typed views over the HotSpot structures the VM walk reads (vm_stack_walker.h): a JavaThread
// and its frame anchor, an entry frame's call wrapper, the code cache and its blobs, an
// nmethod's PcDescs and scope stream (ScopeDesc), an interpreter frame, a Method and its
// ConstMethod. A view is an address and the VmLayout (vm_layout.h) that says where its fields
// lie; each accessor reads its field from VM or stack memory directly. Fields the VM's tables do
// not list are fixed by the platform's frame layout (x86-64 and AArch64, JDK 9+), below.
//
// Why a reader cannot crash: the memory belongs to the VM and changes under the reader (a blob
// freed, a stack popped), so every accessor must run inside FaultGuard::Run
// (profiler/sampler/fault_guard.h), which turns a fault into the end of the walk. Accessors
// allocate nothing, take no lock and loop a bounded number of times. A value read is a hint until
// the walk has checked it (a jmethodID that leads back to its Method*, a stack step that moves
// up): the views check only what is cheap (MethodView::Plausible).
//
// Thread safety: views hold nothing but an address and a pointer to a layout that no longer
// changes once published; any thread, the signal handler included, may use them. The one shared
// state, MethodView's Method* -> jmethodID cache, is lock-free with relaxed words, and a hit is
// used only once verified like a miss's result, so a torn entry is a miss.
#ifndef CTXPROF_JNI_VM_VIEWS_H_
#define CTXPROF_JNI_VM_VIEWS_H_

#include <cstdint>
#include <cstring>

#include "jni/vm_layout.h"

namespace ctxprof {

constexpr uintptr_t kWord = sizeof(uintptr_t);

// Platform frame layout: words from a frame's fp.
constexpr intptr_t kSavedFpSlot = 0;
constexpr intptr_t kReturnAddressSlot = 1;
constexpr intptr_t kSenderSpSlot = 2;  // the caller's sp is just above the return address
constexpr intptr_t kInterpreterMethodSlot = -3;
// The interpreter frame's bytecode pointer (JDK 11+; HotSpot does not export it).
#if defined(__aarch64__)
constexpr intptr_t kInterpreterBcpSlot = -9;
#else
constexpr intptr_t kInterpreterBcpSlot = -8;
#endif

// A read of VM or stack memory: only inside FaultGuard::Run.
template <typename T>
T VmRead(uintptr_t address) {
  T value;
  memcpy(&value, reinterpret_cast<const void*>(address), sizeof(T));
  return value;
}

// JavaFrameAnchor: the last Java frame a thread (or a JavaCallWrapper) left for the VM.
class FrameAnchorView {
 public:
  FrameAnchorView(const VmLayout& layout, uintptr_t address) : l_(&layout), at_(address) {}
  uintptr_t last_java_sp() const { return VmRead<uintptr_t>(at_ + l_->frame_anchor.sp); }
  uintptr_t last_java_pc() const { return VmRead<uintptr_t>(at_ + l_->frame_anchor.pc); }
  uintptr_t last_java_fp() const { return VmRead<uintptr_t>(at_ + l_->frame_anchor.fp); }

 private:
  const VmLayout* l_;
  uintptr_t at_;
};

class JavaThreadView {
 public:
  JavaThreadView(const VmLayout& layout, uintptr_t address) : l_(&layout), at_(address) {}
  int32_t state() const { return VmRead<int32_t>(at_ + l_->java_thread.state); }
  FrameAnchorView anchor() const { return {*l_, at_ + l_->java_thread.anchor}; }
  // The innermost ContinuationEntry on the thread's stack, 0 when no virtual thread is mounted.
  // Only when the layout has continuations.
  uintptr_t cont_entry() const { return VmRead<uintptr_t>(at_ + l_->java_thread.cont_entry); }

 private:
  const VmLayout* l_;
  uintptr_t at_;
};

// The call stub's frame (an entry frame): its JavaCallWrapper's anchor holds the Java frames
// before the VM call, if any.
class EntryFrameView {
 public:
  EntryFrameView(const VmLayout& layout, uintptr_t fp) : l_(&layout), fp_(fp) {}
  FrameAnchorView call_wrapper_anchor() const {
    const auto wrapper = VmRead<uintptr_t>(fp_ + l_->entry_call_wrapper_slot * kWord);
    return {*l_, wrapper + l_->call_wrapper_anchor};
  }

 private:
  const VmLayout* l_;
  uintptr_t fp_;
};

class InterpreterFrameView {
 public:
  InterpreterFrameView(const VmLayout& layout, uintptr_t fp) : l_(&layout), fp_(fp) {}
  uintptr_t method() const { return VmRead<uintptr_t>(fp_ + kInterpreterMethodSlot * kWord); }
  uintptr_t bcp() const { return VmRead<uintptr_t>(fp_ + kInterpreterBcpSlot * kWord); }
  // The sp the interpreter saved for its caller (its unextended sp: a compiled caller may have
  // extended its frame for the call's arguments).
  uintptr_t sender_sp() const {
    return VmRead<uintptr_t>(fp_ + l_->interpreter_sender_sp_slot * kWord);
  }

 private:
  const VmLayout* l_;
  uintptr_t fp_;
};

enum class CodeKind {
  kOutsideCodeCache,  // native code: a C frame
  kUnknown,           // in a code heap but in no live blob
  kInterpreter,
  kCompiled,        // an nmethod of a Java method
  kCompiledNative,  // an nmethod wrapping a native method
  kStub,            // any other blob: stubs, adapters, the call stub
};

class CodeBlobView {
 public:
  CodeBlobView(const VmLayout& layout, uintptr_t start, CodeKind kind)
      : l_(&layout), start_(start), kind_(kind) {}
  uintptr_t start() const { return start_; }
  CodeKind kind() const { return kind_; }
  bool is_java() const {
    return kind_ == CodeKind::kInterpreter || kind_ == CodeKind::kCompiled ||
           kind_ == CodeKind::kCompiledNative;
  }
  int32_t frame_words() const { return VmRead<int32_t>(start_ + l_->code_blob.frame_size); }
  uintptr_t code_begin() const {
    return l_->code_blob.code_begin_is_offset
               ? start_ + VmRead<int32_t>(start_ + l_->code_blob.code_begin)
               : VmRead<uintptr_t>(start_ + l_->code_blob.code_begin);
  }
  // CodeBlob::is_frame_complete_at: `pc` is past the code that builds the frame.
  bool FrameCompleteAt(uintptr_t pc) const {
    const int32_t offset = l_->code_blob.frame_complete_bytes == 4
                               ? VmRead<int32_t>(start_ + l_->code_blob.frame_complete)
                               : VmRead<int16_t>(start_ + l_->code_blob.frame_complete);
    return offset >= 0 && pc >= code_begin() + static_cast<uint32_t>(offset);
  }

 private:
  const VmLayout* l_;
  uintptr_t start_;
  CodeKind kind_;
};

// The code heaps, where a pc's blob is found like HotSpot's CodeHeap::find_blob.
class CodeCacheView {
 public:
  explicit CodeCacheView(const VmLayout& layout) : l_(&layout) {}
  // In a heap's reserved bounds; reads nothing.
  bool Contains(uintptr_t pc) const;
  // The blob that contains `pc`: its kind from the blob's name.
  CodeBlobView FindBlob(uintptr_t pc) const;

 private:
  const VmLayout* l_;
};

// A scope of an nmethod's debug information (ScopeDesc): its offset in the nmethod's scope
// stream, 0 for none. The stream's integers are UNSIGNED5.
class ScopeDescView {
 public:
  ScopeDescView(const VmLayout& layout, uintptr_t stream, int32_t offset)
      : l_(&layout), stream_(stream), offset_(offset) {}
  bool exists() const { return offset_ > 0; }
  // The scope this one is inlined into (it does not exist for the outermost one).
  ScopeDescView sender() const {
    uintptr_t position = stream_ + static_cast<uint32_t>(offset_);
    return {*l_, stream_, static_cast<int32_t>(ReadUnsigned5(&position))};
  }
  // The whole record (DebugInfoReadStream: read_int, read_method, read_bci).
  struct Record {
    int32_t sender;         // the sender scope's offset
    uint32_t method_index;  // 1-based, in the nmethod's metadata; 0 for none
    int32_t bci;
  };
  Record Read() const;
  ScopeDescView At(int32_t offset) const { return {*l_, stream_, offset}; }

 private:
  uint32_t ReadUnsigned5(uintptr_t* position) const;

  const VmLayout* l_;
  uintptr_t stream_;
  int32_t offset_;
};

// How a compiled frame's pc is looked up in its PcDescs (NmethodView::FirstScope): a caller's
// return address; the first Java frame stopped at a VM call (the anchor's own frame), at a call
// site (VmStackWalker::Start::kReturnAddress) or interrupted anywhere else.
enum class PcKind { kCaller, kStoppedAtCall, kCallSite, kInterrupted };

class NmethodView {
 public:
  // `start`: a blob of kind kCompiled or kCompiledNative.
  NmethodView(const VmLayout& layout, uintptr_t start)
      : l_(&layout), blob_(layout, start, CodeKind::kCompiled) {}
  uintptr_t method() const { return VmRead<uintptr_t>(blob_.start() + l_->nmethod.method); }
  // Only when the layout has it (nmethod.compile_id != 0).
  int32_t compile_id() const { return VmRead<int32_t>(blob_.start() + l_->nmethod.compile_id); }
  // The innermost scope of the frame at `pc`, as ASGCT's vframe stream finds it (except at a
  // call site).
  ScopeDescView FirstScope(uintptr_t pc, PcKind kind) const;
  // The nmethod's metadata array (the Method* and Klass* its code refers to). Only when the
  // layout walks.
  class Metadata {
   public:
    explicit Metadata(uintptr_t begin) : begin_(begin) {}
    // The Method* at a scope's `index` (1-based).
    uintptr_t MethodAt(uint32_t index) const {
      return VmRead<uintptr_t>(begin_ + (index - 1) * kWord);
    }

   private:
    uintptr_t begin_;
  };
  Metadata metadata() const;

 private:
  // The scope decode offset of the PcDesc in [begin, end) for `pc_offset` (exact) or of the
  // first one after it; 0 when there is none.
  int32_t ScopeOffsetAt(uintptr_t begin, uintptr_t end, int32_t pc_offset, bool exact) const;

  const VmLayout* l_;
  CodeBlobView blob_;
};

class MethodView {
 public:
  MethodView(const VmLayout& layout, uintptr_t address) : l_(&layout), at_(address) {}
  uintptr_t address() const { return at_; }
  // Could be VM metadata: non-null and word-aligned (saves a fault on the commonest garbage;
  // FaultGuard catches the rest).
  static bool Plausible(uintptr_t address) { return address >= 4096 && address % kWord == 0; }
  bool is_native() const;
  // Method::validate_bci_from_bcp: the bci of `bcp`, 0 outside the bytecodes (a frame being
  // built), as the vframe stream reports it.
  int32_t BciOf(uintptr_t bcp) const;
  // The method's jmethodID through its class's jmethodID array (cached by Method*); false unless
  // it leads back to this Method* (not a Method*, or no jmethodID created yet).
  bool FindJmethodId(uintptr_t* id) const;
  // `id` is a jmethodID of this method: its slot holds the Method* (JDK 17-25).
  bool IsJmethodId(uintptr_t id) const {
    return id != 0 && id % kWord == 0 && VmRead<uintptr_t>(id) == at_;
  }

 private:
  bool LookUpJmethodId(uintptr_t* id) const;

  const VmLayout* l_;
  uintptr_t at_;
};

}  // namespace ctxprof

#endif  // CTXPROF_JNI_VM_VIEWS_H_
