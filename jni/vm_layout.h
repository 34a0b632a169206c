// VmLayout: where the fields of the HotSpot structures the VM walk reads (vm_stack_walker.h)
// lie in the running VM, resolved once from the VM's own tables (vm_structs.h), off the signal
// path. The typed views of vm_views.h read memory through it.
//
// Offsets that the tables do not list are fixed by the platform's frame layout and live in
// vm_views.h. The JDK versions each field comes from, and why some are chosen over others, are
// in docs/JAVA.md ("The VM walk's layout").
//
// Thread safety: ResolveVmLayout may run on any thread but the signal handler, after
// FaultGuard::Install (it reads the code cache's heaps under a guard). A VmLayout is a plain
// value, trivially copyable; the walk publishes its copy with a release store and its readers
// load it with acquire (vm_stack_walker.cc), so no reader sees a half-written layout.
#ifndef CTXPROF_JNI_VM_LAYOUT_H_
#define CTXPROF_JNI_VM_LAYOUT_H_

#include <jni.h>

#include <cstdint>

#include "profiler/base/status.h"

namespace ctxprof {

struct VmLayout {
  static constexpr int kMaxCodeHeaps = 8;

  // A code heap's reserved bounds and segment map: fixed for the VM's life.
  struct CodeHeap {
    uintptr_t low = 0;   // VirtualSpace::_low of CodeHeap::_memory: segment 0 starts here
    uintptr_t high = 0;  // its _high_boundary
    uintptr_t segmap = 0;
    int log2_segment = 0;
  };
  CodeHeap heaps[kMaxCodeHeaps];
  int heap_count = 0;
  // The heaps' lowest low and highest high; `code_gapless` when every address between them is in
  // a heap (the usual case: the VM splits one reservation into its heaps), so that a pc is in
  // the code cache by these two compares alone.
  uintptr_t code_low = 0;
  uintptr_t code_high = 0;
  bool code_gapless = false;
  uint64_t heap_block_size = 0;  // a CodeBlob starts right after its HeapBlock
  uint64_t heap_block_used = 0;  // HeapBlock::_header._used

  struct {
    uint64_t name = 0;
    uint64_t size = 0;
    uint64_t frame_size = 0;  // in words
    bool code_begin_is_offset = false;
    uint64_t code_begin = 0;           // _code_begin (pointer) or _code_offset (int)
    int16_t frame_complete_bytes = 0;  // _frame_complete_offset: 4 (int) or 2 (int16_t)
    uint64_t frame_complete = 0;
    uint64_t mutable_data = 0;
    uint64_t relocation_size = 0;
  } code_blob;

  struct {
    uint64_t method = 0;
    bool scopes_in_immutable_data = false;  // the JDK 25 layout
    uint64_t immutable_data = 0;
    uint64_t pcs_begin = 0;     // int: offset of the first PcDesc
    uint64_t pcs_end = 0;       // int: offset just past the last PcDesc
    uint64_t scopes_begin = 0;  // JDK 17: pointer field; JDK 25: the same int as pcs_end
    bool metadata_in_mutable_data = false;  // JDK 25: after the relocations in _mutable_data
    uint64_t metadata = 0;                  // JDK 17/21: int, offset from the nmethod
    uint64_t compile_id = 0;  // int, unique per compilation; 0 when not exported (no frame cache)
  } nmethod;

  struct {
    uint64_t size = 0;
    uint64_t pc_offset = 0;
    uint64_t scope_offset = 0;
  } pc_desc;
  uint32_t unsigned5_excluded = 0;  // 1 since JDK 20: the scope stream never uses the byte 0

  struct {
    uint64_t state = 0;
    uint64_t anchor = 0;
    uint64_t cont_entry = 0;  // _cont_entry, the innermost one (when `continuations`)
    int32_t in_java = 0;      // JavaThreadState values
    int32_t in_java_trans = 0;
    int32_t in_native = 0;
    int32_t in_vm = 0;
    int32_t blocked = 0;
  } java_thread;

  struct {
    uint64_t sp = 0;  // within JavaFrameAnchor
    uint64_t pc = 0;
    uint64_t fp = 0;
  } frame_anchor;

  uintptr_t call_stub_return = 0;
  int32_t entry_call_wrapper_slot = 0;  // words from an entry frame's fp
  uint64_t call_wrapper_anchor = 0;
  int32_t interpreter_sender_sp_slot = 0;

  // Virtual threads (exported by JDK 25, not by JDK 21).
  bool continuations = false;
  uintptr_t cont_entry_return_pc = 0;  // &ContinuationEntry::_return_pc
  uint64_t cont_entry_size = 0;        // the entry's size on the stack

  // What only Walk needs (a scope's Method*, a Method*'s jmethodID and flags, an interpreted
  // frame's bci); `walks` is false when one of them is missing.
  bool walks = false;
  struct {
    uint64_t const_method = 0;
    uint64_t access_flags = 0;  // AccessFlags: the low 16 bits hold the class file's flags
  } method;
  struct {
    uint64_t size = 0;  // the bytecodes follow the ConstMethod
    uint64_t constants = 0;
    uint64_t code_size = 0;  // u2
    uint64_t idnum = 0;      // u2
  } const_method;
  uint64_t constant_pool_holder = 0;
  uint64_t klass_jmethod_ids = 0;  // [0] = length, [idnum + 1] = the method's jmethodID
};

// ResolveVmLayout's result: the layout, and whether Walk can use it (ok), or why not
// (kUnavailable naming what the VM lacks; layout.walks is then false).
struct ResolvedVmLayout {
  VmLayout layout;
  Status walk;
};

// Reads the layout from the tables of the VM behind `jni` (any JNIEnv of it; the code cache
// must be initialised: VMInit or later). Fails with kUnavailable naming the first thing the VM
// lacks when not even the typing walk can run.
StatusOr<ResolvedVmLayout> ResolveVmLayout(JNIEnv* jni);

}  // namespace ctxprof

#endif  // CTXPROF_JNI_VM_LAYOUT_H_
