#include "jni/java_frame_types.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <initializer_list>

#include "jni/vm_structs.h"
#include "profiler/sampler/fault_guard.h"
#include "profiler/sampler/machine_context.h"

namespace ctxprof {
namespace {

constexpr uintptr_t kWord = sizeof(uintptr_t);
// Platform frame layout (x86-64 and AArch64, JDK 9+): words from a frame's fp.
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
constexpr uint16_t kAccNative = 0x0100;  // JVM_ACC_NATIVE, the class file's flag
// AArch64 HotSpot does not export frame::entry_frame_call_wrapper_offset; its value there.
constexpr int32_t kAarch64EntryFrameCallWrapperSlot = -8;

constexpr int kMaxCodeHeaps = 8;
constexpr uintptr_t kMaxStackStep = 16u << 20;
constexpr int kMaxNonJavaFrames = 64;  // stubs, adapters, C frames stepped over per walk
constexpr int kMaxSegmentHops = 1 << 16;
constexpr uint8_t kFreeSegment = 0xFF;
constexpr uint32_t kUnsigned5LowBytes = 192;  // a byte below this ends an UNSIGNED5 integer

struct CodeHeapBounds {
  uintptr_t low = 0;   // VirtualSpace::_low of CodeHeap::_memory: segment 0 starts here
  uintptr_t high = 0;  // its _high_boundary
  uintptr_t segmap = 0;
  int log2_segment = 0;
};

// Everything Assign needs, resolved by Init.
struct Layout {
  CodeHeapBounds heaps[kMaxCodeHeaps];
  int heap_count = 0;
  uint64_t heap_block_size = 0;  // a CodeBlob starts right after its HeapBlock
  uint64_t heap_block_used = 0;  // HeapBlock::_header._used

  uint64_t blob_name = 0;
  uint64_t blob_size = 0;
  uint64_t blob_frame_size = 0;  // in words
  bool code_begin_is_offset = false;
  uint64_t blob_code_begin = 0;  // CodeBlob::_code_begin (pointer) or _code_offset (int)

  uint64_t nmethod_method = 0;
  bool scopes_in_immutable_data = false;  // JDK 25 layout
  uint64_t nmethod_immutable_data = 0;
  uint64_t nmethod_pcs_begin = 0;     // int: offset of the first PcDesc
  uint64_t nmethod_pcs_end = 0;       // int: offset just past the last PcDesc
  uint64_t nmethod_scopes_begin = 0;  // JDK 17: pointer field; JDK 25: the same int as pcs_end
  uint64_t pc_desc_size = 0;
  uint64_t pc_desc_pc = 0;
  uint64_t pc_desc_scope = 0;
  uint32_t unsigned5_excluded = 0;  // 1 since JDK 20: the byte 0 is never used

  // What Walk needs beyond the typing walk: a scope's Method* (the nmethod's metadata), a
  // Method*'s jmethodID (its class's jmethodID array at the method's idnum) and native flag, an
  // interpreted frame's bci. False when one of them is missing (JDK 22-24's nmethod layout) or on
  // JDK 19-21: Walk then declines every stack.
  bool walks = false;
  uint64_t method_const_method = 0;
  uint64_t method_access_flags = 0;  // AccessFlags: the low 16 bits hold the class file's flags
  uint64_t const_method_size = 0;    // the bytecodes follow the ConstMethod
  uint64_t const_method_constants = 0;
  uint64_t const_method_code_size = 0;  // u2
  uint64_t const_method_idnum = 0;      // u2
  uint64_t constant_pool_holder = 0;
  uint64_t klass_jmethod_ids = 0;         // [0] = length, [idnum + 1] = the method's jmethodID
  bool metadata_in_mutable_data = false;  // JDK 25: after the relocations in _mutable_data
  uint64_t nmethod_metadata = 0;          // JDK 17/21: int, offset from the nmethod
  uint64_t blob_mutable_data = 0;
  uint64_t blob_relocation_size = 0;
  int16_t frame_complete_bytes = 0;  // CodeBlob::_frame_complete_offset: 4 (int) or 2 (int16_t)
  uint64_t blob_frame_complete = 0;

  int32_t in_native = 0;
  int32_t in_vm = 0;
  int32_t blocked = 0;

  uint64_t thread_state = 0;
  int32_t in_java = 0;
  int32_t in_java_trans = 0;
  uint64_t thread_anchor = 0;
  uint64_t anchor_sp = 0;  // within JavaFrameAnchor
  uint64_t anchor_pc = 0;
  uint64_t anchor_fp = 0;
  uintptr_t call_stub_return = 0;
  int32_t entry_call_wrapper_slot = 0;
  uint64_t call_wrapper_anchor = 0;
  int32_t interpreter_sender_sp_slot = 0;

  // Virtual threads (JDK 25 exports these; JDK 21 does not, and typing stops at a yielded
  // virtual thread's bottom frame there).
  bool continuations = false;
  uint64_t thread_cont_entry = 0;      // JavaThread::_cont_entry, the innermost one
  uintptr_t cont_entry_return_pc = 0;  // &ContinuationEntry::_return_pc
  uint64_t cont_entry_size = 0;        // the entry's size on the stack
};

Layout g_layout;  // written by Init before g_ready (release); read by Assign after it (acquire)
std::atomic<bool> g_ready{false};

// Method* -> jmethodID for Walk: a direct-mapped table every handler reads and fills, so that a
// hot method costs a lookup instead of its chain of five dependent loads (ConstMethod, constant
// pool, class, jmethodID array, jmethodID). Lock-free: an entry is two relaxed words written one
// after the other, so a reader may see the method of one write with the jmethodID of another.
// It never trusts an entry: a hit is verified as the slow path's result is, by the jmethodID's
// slot holding the Method* (a stale or mixed entry fails that and is a miss), which makes the
// jmethodID the method's whatever entry it came from.
constexpr size_t kMethodIdSlots = 4096;  // 64 KB of zero pages until used
struct MethodIdSlot {
  std::atomic<uintptr_t> method{0};
  std::atomic<uintptr_t> id{0};
};
MethodIdSlot g_method_ids[kMethodIdSlots];

MethodIdSlot& MethodIdSlotOf(uintptr_t method) {
  return g_method_ids[(method * 0x9E3779B97F4A7C15ull) >> 52];  // the top 12 bits
}

// Collects the offsets Init needs and remembers the first that is missing.
class LayoutReader {
 public:
  explicit LayoutReader(const VmStructs& tables) : tables_(tables) {}

  // An instance field whose C++ type is one of `types`.
  bool Offset(const char* type, const char* field, std::initializer_list<const char*> types,
              uint64_t* out) {
    VmStructs::Field found;
    if (!tables_.FindField(type, field, &found) || found.is_static) {
      return Fail(std::string(type) + "::" + field + " is not in the VM's field table");
    }
    for (const char* allowed : types) {
      if (found.type == allowed) {
        *out = found.offset;
        return true;
      }
    }
    return Fail(std::string(type) + "::" + field + " has type '" + found.type + "'");
  }
  bool Has(const char* type, const char* field) const {
    VmStructs::Field found;
    return tables_.FindField(type, field, &found);
  }
  // The C++ type of a field, "" when the tables lack it.
  std::string FieldType(const char* type, const char* field) const {
    VmStructs::Field found;
    return tables_.FindField(type, field, &found) ? std::string(found.type) : std::string();
  }
  bool Static(const char* type, const char* field, const void** address) {
    VmStructs::Field found;
    if (!tables_.FindField(type, field, &found) || !found.is_static || found.address == nullptr) {
      return Fail(std::string(type) + "::" + field + " is not in the VM's field table");
    }
    *address = found.address;
    return true;
  }
  bool Constant(const char* name, int32_t* value) {
    return tables_.IntConstant(name, value) ||
           Fail(std::string("the VM does not export the constant ") + name);
  }
  bool Size(const char* type, uint64_t* out) {
    *out = tables_.TypeSize(type);
    return *out != 0 || Fail(std::string("the VM's type table lacks ") + type);
  }
  bool Fail(const std::string& what) {
    if (error_.empty()) error_ = what;
    return false;
  }
  const std::string& error() const { return error_; }

 private:
  const VmStructs& tables_;
  std::string error_;
};

template <typename T>
T Read(uintptr_t address) {
  T value;
  memcpy(&value, reinterpret_cast<const void*>(address), sizeof(T));
  return value;
}

// The code heaps' bounds and segment maps: fixed once the code cache is initialised.
bool ReadCodeHeaps(LayoutReader* reader, Layout* layout) {
  const void* heaps_address = nullptr;
  uint64_t length = 0, data = 0, memory = 0, segmap = 0, log2_segment = 0;
  uint64_t low = 0, high_boundary = 0;
  if (!reader->Static("CodeCache", "_heaps", &heaps_address) ||
      !reader->Offset("GrowableArrayBase", "_len", {"int"}, &length) ||
      !reader->Offset("GrowableArray<int>", "_data", {"int*"}, &data) ||
      !reader->Offset("CodeHeap", "_memory", {"VirtualSpace"}, &memory) ||
      !reader->Offset("CodeHeap", "_segmap", {"VirtualSpace"}, &segmap) ||
      !reader->Offset("CodeHeap", "_log2_segment_size", {"int"}, &log2_segment) ||
      !reader->Offset("VirtualSpace", "_low", {"char*"}, &low) ||
      !reader->Offset("VirtualSpace", "_high_boundary", {"char*"}, &high_boundary)) {
    return false;
  }
  struct Heaps {
    const void* address;
    uint64_t length, data, memory, segmap, log2_segment, low, high_boundary;
    Layout* layout;
    bool ok = false;
  } heaps{heaps_address, length, data, memory, segmap, log2_segment, low, high_boundary, layout};
  // The VM's own memory, but read through offsets that came from its tables: guarded anyway.
  const bool read = FaultGuard::Run(
      [](void* state) {
        Heaps& h = *static_cast<Heaps*>(state);
        const auto array = Read<uintptr_t>(reinterpret_cast<uintptr_t>(h.address));
        if (array == 0) return;
        const int count = Read<int32_t>(array + h.length);
        const auto elements = Read<uintptr_t>(array + h.data);
        if (count <= 0 || count > kMaxCodeHeaps || elements == 0) return;
        for (int i = 0; i < count; i++) {
          const auto heap = Read<uintptr_t>(elements + i * kWord);
          CodeHeapBounds& bounds = h.layout->heaps[i];
          bounds.low = Read<uintptr_t>(heap + h.memory + h.low);
          bounds.high = Read<uintptr_t>(heap + h.memory + h.high_boundary);
          bounds.segmap = Read<uintptr_t>(heap + h.segmap + h.low);
          bounds.log2_segment = Read<int32_t>(heap + h.log2_segment);
          if (bounds.low == 0 || bounds.high <= bounds.low || bounds.segmap == 0 ||
              bounds.log2_segment < 4 || bounds.log2_segment > 16) {
            return;
          }
        }
        h.layout->heap_count = count;
        h.ok = true;
      },
      &heaps);
  return (read && heaps.ok) || reader->Fail("the code cache's heaps could not be read");
}

// The fields Walk needs beyond the typing walk's. False with reader->error() naming the first
// that is missing.
bool ResolveWalkLayout(LayoutReader* reader, Layout* layout) {
  LayoutReader& r = *reader;
  Layout& l = *layout;
  bool ok =
      r.Offset("Method", "_constMethod", {"ConstMethod*"}, &l.method_const_method) &&
      r.Offset("Method", "_access_flags", {"AccessFlags"}, &l.method_access_flags) &&
      r.Size("ConstMethod", &l.const_method_size) &&
      r.Offset("ConstMethod", "_constants", {"ConstantPool*"}, &l.const_method_constants) &&
      r.Offset("ConstMethod", "_code_size", {"u2"}, &l.const_method_code_size) &&
      r.Offset("ConstMethod", "_method_idnum", {"u2"}, &l.const_method_idnum) &&
      r.Offset("ConstantPool", "_pool_holder", {"InstanceKlass*"}, &l.constant_pool_holder) &&
      r.Offset("InstanceKlass", "_methods_jmethod_ids", {"jmethodID*"}, &l.klass_jmethod_ids) &&
      r.Constant("_thread_in_native", &l.in_native) && r.Constant("_thread_in_vm", &l.in_vm) &&
      r.Constant("_thread_blocked", &l.blocked);
  if (!ok) return false;
  // The frame-complete offset: an int up to JDK 21, an int16_t since JDK 23.
  if (!r.Offset("CodeBlob", "_frame_complete_offset", {"int", "int16_t"}, &l.blob_frame_complete)) {
    return false;
  }
  l.frame_complete_bytes = r.FieldType("CodeBlob", "_frame_complete_offset") == "int" ? 4 : 2;
  // The metadata: at an int offset from the nmethod up to JDK 21; after the relocations in the
  // mutable data since JDK 25 (JDK 23 and 24 place it otherwise, and are not read).
  if (r.Has("nmethod", "_metadata_offset")) {
    return r.Offset("nmethod", "_metadata_offset", {"int"}, &l.nmethod_metadata);
  }
  l.metadata_in_mutable_data = true;
  return r.Offset("CodeBlob", "_mutable_data", {"address"}, &l.blob_mutable_data) &&
         r.Offset("CodeBlob", "_relocation_size", {"int"}, &l.blob_relocation_size);
}

// The layout from the VM's tables. False with *error when the typing walk cannot run; true with
// layout->walks false and *walk_error set when only Walk cannot.
bool ResolveLayout(JNIEnv* jni, Layout* layout, std::string* error, std::string* walk_error) {
  VmStructs tables;
  if (!VmStructs::Open(jni, &tables, error)) return false;
  LayoutReader r(tables);
  Layout& l = *layout;
  uint64_t header = 0, used = 0, anchor = 0;
  bool ok = r.Size("HeapBlock", &l.heap_block_size) &&
            r.Offset("HeapBlock", "_header", {"HeapBlock::Header"}, &header) &&
            r.Offset("HeapBlock::Header", "_used", {"bool"}, &used) &&
            r.Offset("CodeBlob", "_name", {"const char*"}, &l.blob_name) &&
            r.Offset("CodeBlob", "_size", {"int"}, &l.blob_size) &&
            r.Offset("CodeBlob", "_frame_size", {"int"}, &l.blob_frame_size);
  l.heap_block_used = header + used;
  // The code start: a pointer field up to JDK 21, an offset from the blob since JDK 23.
  l.code_begin_is_offset = r.Has("CodeBlob", "_code_offset");
  ok = ok && (l.code_begin_is_offset
                  ? r.Offset("CodeBlob", "_code_offset", {"int"}, &l.blob_code_begin)
                  : r.Offset("CodeBlob", "_code_begin", {"address"}, &l.blob_code_begin));
  // nmethod::_method since JDK 23 (CompiledMethod was folded into nmethod), CompiledMethod before.
  const char* method_owner = r.Has("nmethod", "_method") ? "nmethod" : "CompiledMethod";
  ok = ok && r.Offset(method_owner, "_method", {"Method*"}, &l.nmethod_method);
  l.scopes_in_immutable_data = r.Has("nmethod", "_immutable_data");
  if (l.scopes_in_immutable_data) {
    ok = ok && r.Offset("nmethod", "_immutable_data", {"address"}, &l.nmethod_immutable_data) &&
         r.Offset("nmethod", "_scopes_pcs_offset", {"int"}, &l.nmethod_pcs_begin) &&
         r.Offset("nmethod", "_scopes_data_offset", {"int"}, &l.nmethod_pcs_end);
    l.nmethod_scopes_begin = l.nmethod_pcs_end;
  } else {
    const char* scopes_owner =
        r.Has("CompiledMethod", "_scopes_data_begin") ? "CompiledMethod" : "nmethod";
    ok = ok && r.Offset("nmethod", "_scopes_pcs_offset", {"int"}, &l.nmethod_pcs_begin) &&
         r.Offset("nmethod", "_dependencies_offset", {"int"}, &l.nmethod_pcs_end) &&
         r.Offset(scopes_owner, "_scopes_data_begin", {"address"}, &l.nmethod_scopes_begin);
  }
  ok = ok && r.Size("PcDesc", &l.pc_desc_size) &&
       r.Offset("PcDesc", "_pc_offset", {"int"}, &l.pc_desc_pc) &&
       r.Offset("PcDesc", "_scope_decode_offset", {"int"}, &l.pc_desc_scope) &&
       r.Offset("JavaThread", "_thread_state", {"JavaThreadState"}, &l.thread_state) &&
       r.Constant("_thread_in_Java", &l.in_java) &&
       r.Constant("_thread_in_Java_trans", &l.in_java_trans) &&
       r.Offset("JavaThread", "_anchor", {"JavaFrameAnchor"}, &anchor) &&
       r.Offset("JavaFrameAnchor", "_last_Java_sp", {"intptr_t*"}, &l.anchor_sp) &&
       r.Offset("JavaFrameAnchor", "_last_Java_pc", {"address"}, &l.anchor_pc) &&
       r.Offset("JavaFrameAnchor", "_last_Java_fp", {"intptr_t*"}, &l.anchor_fp) &&
       r.Offset("JavaCallWrapper", "_anchor", {"JavaFrameAnchor"}, &l.call_wrapper_anchor) &&
       r.Constant("frame::interpreter_frame_sender_sp_offset", &l.interpreter_sender_sp_slot);
  l.thread_anchor = anchor;
  if (ok &&
      !tables.IntConstant("frame::entry_frame_call_wrapper_offset", &l.entry_call_wrapper_slot)) {
#if defined(__aarch64__)
    l.entry_call_wrapper_slot = kAarch64EntryFrameCallWrapperSlot;
#else
    ok = r.Fail("the VM does not export frame::entry_frame_call_wrapper_offset");
#endif
  }
  l.continuations = r.Has("JavaThread", "_cont_entry");
  if (l.continuations) {
    const void* return_pc = nullptr;
    ok = ok &&
         r.Offset("JavaThread", "_cont_entry", {"ContinuationEntry*"}, &l.thread_cont_entry) &&
         r.Static("ContinuationEntry", "_return_pc", &return_pc) &&
         r.Size("ContinuationEntry", &l.cont_entry_size);
    l.cont_entry_return_pc = reinterpret_cast<uintptr_t>(return_pc);
  }
  const void* call_stub_return = nullptr;
  ok = ok && r.Static("StubRoutines", "_call_stub_return_address", &call_stub_return);
  if (ok) l.call_stub_return = Read<uintptr_t>(reinterpret_cast<uintptr_t>(call_stub_return));
  ok = ok && ReadCodeHeaps(&r, &l);
  if (ok && (l.pc_desc_size < l.pc_desc_pc + 4 || l.pc_desc_size < l.pc_desc_scope + 4 ||
             l.call_stub_return == 0)) {
    ok = r.Fail("the VM's PcDesc or call stub looks unexpected");
  }
  // JNI_VERSION_20 and later: the scope stream's integers are UNSIGNED5 without the zero byte.
  l.unsigned5_excluded = jni->GetVersion() >= 0x00140000 ? 1 : 0;
  if (!ok) {
    *error = r.error();
    return false;
  }
  LayoutReader walk(tables);
  l.walks = ResolveWalkLayout(&walk, &l);
  if (!l.walks) {
    *walk_error = walk.error();
  } else if (!l.continuations && jni->GetVersion() >= 0x00130000) {
    // JDK 19-21 have virtual threads but do not export JavaThread::_cont_entry: Walk could not
    // tell a mounted virtual thread, whose stacks it leaves to ASGCT.
    l.walks = false;
    *walk_error = "this JDK has virtual threads but does not export JavaThread::_cont_entry";
  }
  return true;
}

// One physical frame: where it executes and where its stack begins.
struct PhysicalFrame {
  uintptr_t pc;
  uintptr_t sp;
  uintptr_t unextended_sp;  // the sp the frame's own size is counted from
  uintptr_t fp;
};

enum class CodeKind {
  kOutsideCodeCache,  // native code: a C frame
  kUnknown,           // in a code heap but in no live blob
  kInterpreter,
  kCompiled,        // an nmethod of a Java method
  kCompiledNative,  // an nmethod wrapping a native method
  kStub,            // any other blob: stubs, adapters, the call stub
};

struct Blob {
  uintptr_t start;
  CodeKind kind;
};

// Where a step from one Java frame to the next ended.
enum class Reached {
  kJavaFrame,
  kStackBottom,  // the thread's first entry frame: no Java frame below it
  kLost,         // a frame this walk cannot follow
};

// The walk, run inside FaultGuard::Run: every Read may fault, which abandons it with `done`
// counting the frames already written. Typing (Assign) writes the kinds of ASGCT's frames and
// stops at the first physical frame whose method is not ASGCT's; producing (Walk) writes the
// frames themselves and is `complete` only when it reached the stack's bottom or `count` frames.
class Walker {
 public:
  enum class Mode { kType, kProduce };
  // How a compiled frame's pc is looked up in its PcDescs (FirstScope): a caller's return
  // address; the first Java frame stopped at a VM call (the anchor's own frame), at a call site
  // (JavaFrameTypes::Start::kReturnAddress) or interrupted anywhere else.
  enum class PcKind { kCaller, kStoppedAtCall, kCallSite, kInterrupted };

  Walker(const Layout& layout, Mode mode, const char* thread, const void* ucontext,
         JavaFrameTypes::Start start, RawFrame* frames, int count)
      : l_(layout),
        mode_(mode),
        thread_(reinterpret_cast<uintptr_t>(thread)),
        ucontext_(ucontext),
        start_at_return_(start == JavaFrameTypes::Start::kReturnAddress),
        frames_(frames),
        count_(count) {}

  int done() const { return done_; }
  bool complete() const { return complete_; }
  bool InStub(uintptr_t pc) const { return FindBlob(pc).kind == CodeKind::kStub; }

  void Walk() {
    PhysicalFrame frame;
    const auto anchor_sp = Read<uintptr_t>(thread_ + l_.thread_anchor + l_.anchor_sp);
    const auto anchor_pc = Read<uintptr_t>(thread_ + l_.thread_anchor + l_.anchor_pc);
    const int32_t state = Read<int32_t>(thread_ + l_.thread_state);
    const bool at_anchor = anchor_sp != 0 && anchor_pc != 0;
    if (at_anchor) {
      frame = {anchor_pc, anchor_sp, anchor_sp,
               Read<uintptr_t>(thread_ + l_.thread_anchor + l_.anchor_fp)};
    } else {
      if (state != l_.in_java && state != l_.in_java_trans) return;
      const MachineContext registers(ucontext_);
      frame = {registers.pc(), registers.sp(), registers.sp(), registers.fp()};
    }
    // ASGCT trusts an initial interpreted frame as it is in these states only (forte.cpp,
    // is_decipherable_interpreted_frame); in others it checks the frame in ways this walk does
    // not, so producing leaves such a stack to it.
    state_known_valid_ = state == l_.in_native || state == l_.in_vm || state == l_.blocked;
    // A mounted virtual thread's frames end at its continuation's entry, where ASGCT's walk
    // differs between JDKs: producing leaves those stacks to ASGCT.
    if (mode_ == Mode::kProduce && l_.continuations &&
        Read<uintptr_t>(thread_ + l_.thread_cont_entry) != 0) {
      return;
    }
    Blob blob = FindBlob(frame.pc);
    int steps = 0;
    while (blob.kind == CodeKind::kOutsideCodeCache) {
      if (++steps > kMaxNonJavaFrames || !Step(&frame, NativeSender(frame))) return;
      blob = FindBlob(frame.pc);
    }
    // Code interrupted before its frame is complete (in its prologue, or a stub whose frame
    // never is, such as the safepoint handler blob saving the registers) may not hold its return
    // address where its frame size says: ASGCT's own walk does not trust such a frame
    // (frame::safe_for_sender), and producing leaves the stack to it. Seen with a stub: the
    // sender's pc read from that slot was in the nmethod's stub section (bci 0).
    if (mode_ == Mode::kProduce && !at_anchor && !start_at_return_ && steps == 0 &&
        (blob.kind == CodeKind::kStub || blob.kind == CodeKind::kCompiled) &&
        !FrameComplete(blob.start, frame.pc)) {
      return;
    }
    if (ToJavaFrame(&frame, &blob, &steps) != Reached::kJavaFrame) return;
    // The first Java frame is stopped at a VM call when it is the anchor's frame itself
    // (forte.cpp compares the frame's pc with the anchor's). One reached through a stub has a
    // return address for pc too, but ASGCT looks it up as an interrupted pc; so do both walks.
    PcKind pc_kind = at_anchor && anchor_pc == frame.pc ? PcKind::kStoppedAtCall
                     : at_anchor || !start_at_return_   ? PcKind::kInterrupted
                                                        : PcKind::kCallSite;
    int k = 0;
    while (k < count_) {
      const int frames = mode_ == Mode::kType ? TypeFrames(frame, blob, pc_kind, k)
                                              : ProduceFrames(frame, blob, pc_kind, k);
      if (frames <= 0) return;
      k += frames;
      done_ = std::min(k, count_);
      if (k >= count_) break;
      pc_kind = PcKind::kCaller;
      if (!Step(&frame, AcrossReturnBarrier(frame, JavaSender(frame, blob)))) return;
      blob = FindBlob(frame.pc);
      const Reached reached = ToJavaFrame(&frame, &blob, &steps);
      if (reached == Reached::kLost) return;
      if (reached == Reached::kStackBottom) break;
    }
    complete_ = true;
  }

 private:
  // Moves `frame` to `next` if it is plausible: up the stack, by less than kMaxStackStep.
  static bool Step(PhysicalFrame* frame, const PhysicalFrame& next) {
    if (next.pc == 0 || next.sp <= frame->sp || next.sp - frame->sp >= kMaxStackStep ||
        next.sp % kWord != 0) {
      return false;
    }
    *frame = next;
    return true;
  }

  // Steps over stubs and entry frames until `frame` is a Java frame.
  Reached ToJavaFrame(PhysicalFrame* frame, Blob* blob, int* steps) {
    while (blob->kind == CodeKind::kStub) {
      if (++*steps > kMaxNonJavaFrames) return Reached::kLost;
      PhysicalFrame next;
      if (frame->pc == l_.call_stub_return) {
        // An entry frame: the Java frames before the VM call, if any, are at its anchor.
        const auto wrapper = Read<uintptr_t>(frame->fp + l_.entry_call_wrapper_slot * kWord);
        const uintptr_t anchor = wrapper + l_.call_wrapper_anchor;
        next.sp = Read<uintptr_t>(anchor + l_.anchor_sp);
        if (next.sp == 0) return Reached::kStackBottom;  // the thread's first entry
        next.unextended_sp = next.sp;
        next.fp = Read<uintptr_t>(anchor + l_.anchor_fp);
        next.pc = Read<uintptr_t>(anchor + l_.anchor_pc);
        if (next.pc == 0) next.pc = Read<uintptr_t>(next.sp - kWord);
      } else {
        next = CompiledSender(*frame, blob->start);
      }
      if (!Step(frame, next)) return Reached::kLost;
      *blob = FindBlob(frame->pc);
    }
    const bool java = blob->kind == CodeKind::kInterpreter || blob->kind == CodeKind::kCompiled ||
                      blob->kind == CodeKind::kCompiledNative;
    return java ? Reached::kJavaFrame : Reached::kLost;
  }

  // A virtual thread's frames are thawed onto the carrier's stack lazily: the lowest thawed
  // frame returns to the continuation's return barrier stub, and the frames below it are still
  // frozen in the heap. ASGCT does not walk those (HotSpot's continuation_bottom_sender): it
  // continues at the continuation's entry frame (Continuation.enterSpecial), which sits in the
  // ContinuationEntry on the carrier's stack. `sender` is `frame`'s sender by its frame size;
  // when it returns into a stub at or below the innermost entry, the entry frame is returned
  // instead.
  PhysicalFrame AcrossReturnBarrier(const PhysicalFrame& frame, const PhysicalFrame& sender) const {
    if (!l_.continuations) return sender;
    const auto entry = Read<uintptr_t>(thread_ + l_.thread_cont_entry);
    if (entry == 0 || frame.sp >= entry || sender.sp > entry + l_.cont_entry_size ||
        FindBlob(sender.pc).kind != CodeKind::kStub) {
      return sender;
    }
    return {Read<uintptr_t>(l_.cont_entry_return_pc), entry, entry,
            Read<uintptr_t>(entry + l_.cont_entry_size)};
  }

  PhysicalFrame NativeSender(const PhysicalFrame& frame) const {
    const uintptr_t sender_sp = frame.fp + kSenderSpSlot * kWord;
    return {Read<uintptr_t>(frame.fp + kReturnAddressSlot * kWord), sender_sp, sender_sp,
            Read<uintptr_t>(frame.fp + kSavedFpSlot * kWord)};
  }

  PhysicalFrame CompiledSender(const PhysicalFrame& frame, uintptr_t blob) const {
    const int32_t words = Read<int32_t>(blob + l_.blob_frame_size);
    if (words <= 0) return {0, 0, 0, 0};
    const uintptr_t sender_sp = frame.unextended_sp + static_cast<uintptr_t>(words) * kWord;
    return {Read<uintptr_t>(sender_sp - kWord), sender_sp, sender_sp,
            Read<uintptr_t>(sender_sp - 2 * kWord)};
  }

  PhysicalFrame JavaSender(const PhysicalFrame& frame, const Blob& blob) const {
    if (blob.kind != CodeKind::kInterpreter) return CompiledSender(frame, blob.start);
    // The caller's unextended sp is what the interpreter saved (a compiled caller may have
    // extended its frame for the call's arguments).
    PhysicalFrame sender = NativeSender(frame);
    sender.unextended_sp = Read<uintptr_t>(frame.fp + l_.interpreter_sender_sp_slot * kWord);
    return sender;
  }

  static bool NameIs(uintptr_t name, const char* expected) {
    size_t i = 0;
    for (; expected[i] != '\0'; i++) {
      if (Read<char>(name + i) != expected[i]) return false;
    }
    return Read<char>(name + i) == '\0';
  }

  // The code blob that contains `pc`, found like HotSpot's CodeHeap::find_blob: the segment
  // map's hop counts lead back to the block's first segment.
  Blob FindBlob(uintptr_t pc) const {
    for (int h = 0; h < l_.heap_count; h++) {
      const CodeHeapBounds& heap = l_.heaps[h];
      if (pc < heap.low || pc >= heap.high) continue;
      uintptr_t segment = (pc - heap.low) >> heap.log2_segment;
      uint8_t hop = Read<uint8_t>(heap.segmap + segment);
      if (hop == kFreeSegment) return {0, CodeKind::kUnknown};
      for (int i = 0; hop != 0; i++) {
        if (i == kMaxSegmentHops || hop > segment) return {0, CodeKind::kUnknown};
        segment -= hop;
        hop = Read<uint8_t>(heap.segmap + segment);
      }
      const uintptr_t block = heap.low + (segment << heap.log2_segment);
      if (Read<uint8_t>(block + l_.heap_block_used) == 0) return {0, CodeKind::kUnknown};
      const uintptr_t blob = block + l_.heap_block_size;
      const int32_t size = Read<int32_t>(blob + l_.blob_size);
      if (size <= 0 || pc >= blob + static_cast<uintptr_t>(size)) return {0, CodeKind::kUnknown};
      const auto name = Read<uintptr_t>(blob + l_.blob_name);
      if (name == 0) return {blob, CodeKind::kStub};
      if (NameIs(name, "nmethod")) return {blob, CodeKind::kCompiled};
      if (NameIs(name, "native nmethod")) return {blob, CodeKind::kCompiledNative};
      if (NameIs(name, "Interpreter")) return {blob, CodeKind::kInterpreter};
      return {blob, CodeKind::kStub};
    }
    return {0, CodeKind::kOutsideCodeCache};
  }

  // The scope decode offset of the PcDesc for `pc_offset` (exact) or of the first one after it
  // (the first PcDesc whose offset is >= `pc_offset`), 0 when there is none. The first and the
  // last PcDesc are HotSpot's sentinels and never match.
  int32_t ScopeOffsetAt(uintptr_t begin, uintptr_t end, int32_t pc_offset, bool exact) const {
    const uint64_t size = l_.pc_desc_size;
    if (end < begin || (end - begin) / size < 3) return 0;
    size_t low = 1, high = (end - begin) / size - 1;  // search [low, high)
    while (low < high) {
      const size_t middle = low + (high - low) / 2;
      if (Read<int32_t>(begin + middle * size + l_.pc_desc_pc) < pc_offset) {
        low = middle + 1;
      } else {
        high = middle;
      }
    }
    if (low == (end - begin) / size - 1) return 0;
    const uintptr_t desc = begin + low * size;
    if (exact && Read<int32_t>(desc + l_.pc_desc_pc) != pc_offset) return 0;
    return Read<int32_t>(desc + l_.pc_desc_scope);
  }

  uint32_t ReadUnsigned5(uintptr_t* position) const {
    const uint32_t excluded = l_.unsigned5_excluded;
    uint32_t byte = Read<uint8_t>((*position)++);
    uint32_t value = byte - excluded;
    for (int shift = 6; byte >= kUnsigned5LowBytes && shift <= 24; shift += 6) {
      byte = Read<uint8_t>((*position)++);
      value += (byte - excluded) << shift;
    }
    return value;
  }

  uintptr_t CodeBegin(uintptr_t blob) const {
    return l_.code_begin_is_offset ? blob + Read<int32_t>(blob + l_.blob_code_begin)
                                   : Read<uintptr_t>(blob + l_.blob_code_begin);
  }

  // The offset in *scopes of the innermost scope of the compiled frame at `pc`, as ASGCT's
  // vframe stream finds it (except at a call site); 0 when there is none. A caller: the exact
  // PcDesc of its return address. The first frame (forte.cpp, is_decipherable_compiled_frame):
  // stopped at a VM call, the exact PcDesc, else the first one after pc; interrupted, the first
  // one after pc, else the exact one at pc; at a call site, the PcDesc at or after the return
  // address (JavaFrameTypes::Start), else the first one after it.
  int32_t FirstScope(uintptr_t nmethod, uintptr_t pc, PcKind kind, uintptr_t* scopes) const {
    uintptr_t pcs_begin, pcs_end;
    if (l_.scopes_in_immutable_data) {
      const auto data = Read<uintptr_t>(nmethod + l_.nmethod_immutable_data);
      pcs_begin = data + Read<int32_t>(nmethod + l_.nmethod_pcs_begin);
      pcs_end = data + Read<int32_t>(nmethod + l_.nmethod_pcs_end);
      *scopes = pcs_end;
    } else {
      pcs_begin = nmethod + Read<int32_t>(nmethod + l_.nmethod_pcs_begin);
      pcs_end = nmethod + Read<int32_t>(nmethod + l_.nmethod_pcs_end);
      *scopes = Read<uintptr_t>(nmethod + l_.nmethod_scopes_begin);
    }
    const uintptr_t code = CodeBegin(nmethod);
    if (pc < code || pc - code >= (1u << 30)) return 0;
    const auto pc_offset = static_cast<int32_t>(pc - code);
    int32_t scope = 0;
    if (kind == PcKind::kCaller || kind == PcKind::kStoppedAtCall) {
      scope = ScopeOffsetAt(pcs_begin, pcs_end, pc_offset, true);
    } else if (kind == PcKind::kCallSite) {
      scope = ScopeOffsetAt(pcs_begin, pcs_end, pc_offset, false);
    }
    if (kind != PcKind::kCaller && scope <= 0) {
      scope = ScopeOffsetAt(pcs_begin, pcs_end, pc_offset + 1, false);
    }
    // None there (past the last record, or a record without scopes): the vframe stream then
    // looks the frame's own pc up exactly (vframeStreamCommon::fill_from_frame). That finds
    // the record of the instruction just before an interrupted pc.
    if (kind == PcKind::kInterrupted && scope <= 0) {
      scope = ScopeOffsetAt(pcs_begin, pcs_end, pc_offset, true);
    }
    return std::max(scope, 0);
  }

  // How many of ASGCT's frames the compiled frame at `pc` accounts for (at most `limit`): the
  // scopes of FirstScope's chain. No usable PcDesc: one frame.
  int ScopeCount(uintptr_t nmethod, uintptr_t pc, PcKind kind, int limit) const {
    uintptr_t scopes;
    int32_t scope = FirstScope(nmethod, pc, kind, &scopes);
    int count = 0;
    while (scope > 0 && count < limit) {
      count++;
      uintptr_t position = scopes + static_cast<uint32_t>(scope);
      scope = static_cast<int32_t>(ReadUnsigned5(&position));  // the sender scope's offset
    }
    return std::max(count, 1);
  }

  // Typing: the kinds of ASGCT's frames from frames_[k] that the physical frame accounts for;
  // returns how many, or 0 when its method is not ASGCT's (the walks went apart).
  int TypeFrames(const PhysicalFrame& frame, const Blob& blob, PcKind pc_kind, int k) {
    int scopes = 1;
    uintptr_t method;
    if (blob.kind == CodeKind::kInterpreter) {
      method = Read<uintptr_t>(frame.fp + kInterpreterMethodSlot * kWord);
    } else {
      method = Read<uintptr_t>(blob.start + l_.nmethod_method);
      if (blob.kind == CodeKind::kCompiled) {
        scopes = ScopeCount(blob.start, frame.pc, pc_kind, count_ - k + 1);
      }
    }
    const int last = k + scopes - 1;
    if (last < count_ && !IsIdOf(frames_[last].id, method)) return 0;
    for (int i = k; i <= last && i < count_; i++) {
      FrameKind& kind = frames_[i].kind;
      if (kind == FrameKind::kJavaNative) continue;  // ASGCT's native method mark stays
      kind = blob.kind == CodeKind::kInterpreter ? FrameKind::kJavaInterpreted
             : i < last                          ? FrameKind::kJavaInlined
                                                 : FrameKind::kJavaJit;
    }
    return scopes;
  }

  // Producing: writes the frames of the physical frame from frames_[k] as ASGCT would report
  // them (forte.cpp, vframeStreamForte); returns how many, or 0 when it cannot vouch for them.
  int ProduceFrames(const PhysicalFrame& frame, const Blob& blob, PcKind pc_kind, int k) {
    RawFrame* out = frames_ + k;
    if (blob.kind == CodeKind::kInterpreter) {
      if (pc_kind != PcKind::kCaller && !state_known_valid_) return 0;
      const auto method = Read<uintptr_t>(frame.fp + kInterpreterMethodSlot * kWord);
      if (!PlausibleMetadata(method)) return 0;
      // Method::validate_bci_from_bcp; a bcp outside the bytecodes (a frame being built) is
      // bci 0, as the vframe stream reports it.
      const auto const_method = Read<uintptr_t>(method + l_.method_const_method);
      const uintptr_t code = const_method + l_.const_method_size;
      const auto bcp = Read<uintptr_t>(frame.fp + kInterpreterBcpSlot * kWord);
      const uint16_t code_size = Read<uint16_t>(const_method + l_.const_method_code_size);
      const int32_t bci =
          bcp >= code && bcp - code < code_size ? static_cast<int32_t>(bcp - code) : 0;
      return Emit(method, bci, FrameKind::kJavaInterpreted, out) ? 1 : 0;
    }
    const auto method = Read<uintptr_t>(blob.start + l_.nmethod_method);
    // A native method's wrapper: its pc may be imprecise, so the vframe stream uses no scope.
    if (blob.kind == CodeKind::kCompiledNative) {
      return Emit(method, 0, FrameKind::kJavaJit, out) ? 1 : 0;
    }
    uintptr_t scopes;
    int32_t scope = FirstScope(blob.start, frame.pc, pc_kind, &scopes);
    // No scope: the method itself at bci 0 (vframeStreamCommon::fill_from_compiled_native_frame).
    if (scope == 0) return Emit(method, 0, FrameKind::kJavaJit, out) ? 1 : 0;
    const uintptr_t metadata = MetadataBegin(blob.start);
    const int room = count_ - k;
    int count = 0;
    while (scope > 0 && count < room) {
      // A scope: its sender's offset, its method's index in the metadata (1-based) and its bci
      // + 1 (DebugInfoReadStream: read_int, read_method, read_bci).
      uintptr_t position = scopes + static_cast<uint32_t>(scope);
      const auto sender = static_cast<int32_t>(ReadUnsigned5(&position));
      const uint32_t index = ReadUnsigned5(&position);
      const int32_t bci = static_cast<int32_t>(ReadUnsigned5(&position)) - 1;
      if (index == 0) return 0;
      const auto scope_method = Read<uintptr_t>(metadata + (index - 1) * kWord);
      if (!Emit(scope_method, bci, sender > 0 ? FrameKind::kJavaInlined : FrameKind::kJavaJit,
                out + count)) {
        return 0;
      }
      count++;
      scope = sender;
    }
    return count;
  }

  // Writes `method`'s frame as ASGCT's frame converted by JavaStackWalker::Walk: its jmethodID,
  // and bci and kind, or -1 and kJavaNative for a native method (ASGCT's line -3). False when
  // `method` has no jmethodID that leads back to it (not a Method*, or none created yet).
  bool Emit(uintptr_t method, int32_t bci, FrameKind kind, RawFrame* out) const {
    if (!PlausibleMetadata(method)) return false;
    MethodIdSlot& slot = MethodIdSlotOf(method);
    uintptr_t id = 0;
    if (slot.method.load(std::memory_order_relaxed) == method) {
      id = slot.id.load(std::memory_order_relaxed);
      if (!IsIdOf(id, method)) id = 0;
    }
    if (id == 0) {
      if (!MethodId(method, &id)) return false;
      slot.method.store(method, std::memory_order_relaxed);
      slot.id.store(id, std::memory_order_relaxed);
    }
    if (Read<uint16_t>(method + l_.method_access_flags) & kAccNative) {
      *out = {id, -1, FrameKind::kJavaNative};
    } else {
      *out = {id, bci, kind};
    }
    return true;
  }

  // The jmethodID of `method` through its class's jmethodID array; false unless it leads back to
  // `method` (not a Method*, or no jmethodID created yet).
  bool MethodId(uintptr_t method, uintptr_t* out) const {
    const auto const_method = Read<uintptr_t>(method + l_.method_const_method);
    if (!PlausibleMetadata(const_method)) return false;
    const auto constants = Read<uintptr_t>(const_method + l_.const_method_constants);
    if (!PlausibleMetadata(constants)) return false;
    const auto holder = Read<uintptr_t>(constants + l_.constant_pool_holder);
    if (!PlausibleMetadata(holder)) return false;
    const auto ids = Read<uintptr_t>(holder + l_.klass_jmethod_ids);
    if (ids == 0 || ids % kWord != 0) return false;
    const uint16_t idnum = Read<uint16_t>(const_method + l_.const_method_idnum);
    if (idnum >= Read<uintptr_t>(ids)) return false;  // ids[0] holds the array's length
    const auto id = Read<uintptr_t>(ids + (idnum + 1u) * kWord);
    if (!IsIdOf(id, method)) return false;
    *out = id;
    return true;
  }

  // `id` is a jmethodID of `method`: its slot holds the Method* (JDK 17-25).
  static bool IsIdOf(uintptr_t id, uintptr_t method) {
    return id != 0 && id % kWord == 0 && Read<uintptr_t>(id) == method;
  }

  // A pointer that could be VM metadata: non-null and word-aligned (saves a fault on the
  // commonest garbage; FaultGuard catches the rest).
  static bool PlausibleMetadata(uintptr_t address) {
    return address >= 4096 && address % kWord == 0;
  }

  // The nmethod's metadata array (Method* and Klass* its code refers to).
  uintptr_t MetadataBegin(uintptr_t nmethod) const {
    if (l_.metadata_in_mutable_data) {
      return Read<uintptr_t>(nmethod + l_.blob_mutable_data) +
             Read<int32_t>(nmethod + l_.blob_relocation_size);
    }
    return nmethod + Read<int32_t>(nmethod + l_.nmethod_metadata);
  }

  // CodeBlob::is_frame_complete_at: `pc` is past the code that builds the frame.
  bool FrameComplete(uintptr_t blob, uintptr_t pc) const {
    const int32_t offset = l_.frame_complete_bytes == 4
                               ? Read<int32_t>(blob + l_.blob_frame_complete)
                               : Read<int16_t>(blob + l_.blob_frame_complete);
    return offset >= 0 && pc >= CodeBegin(blob) + static_cast<uint32_t>(offset);
  }

  const Layout& l_;
  const Mode mode_;
  const uintptr_t thread_;
  const void* const ucontext_;
  // The context's pc is a return address (JavaFrameTypes::Start::kReturnAddress); it matters
  // only when the walk starts there, not at the thread's anchor.
  const bool start_at_return_;
  RawFrame* const frames_;
  const int count_;
  bool state_known_valid_ = false;
  int done_ = 0;
  bool complete_ = false;
};

}  // namespace

bool JavaFrameTypes::Init(JNIEnv* jni, std::string* error, std::string* walk_error) {
  if (g_ready.load(std::memory_order_acquire)) return true;
  const Status guard = FaultGuard::Install();
  if (!guard.ok()) {
    *error = guard.message();
    return false;
  }
  Layout layout;
  if (!ResolveLayout(jni, &layout, error, walk_error)) return false;
  g_layout = layout;
  g_ready.store(true, std::memory_order_release);
  return true;
}

bool JavaFrameTypes::InCodeCache(uint64_t pc) {
  if (!g_ready.load(std::memory_order_acquire)) return false;
  for (int h = 0; h < g_layout.heap_count; h++) {
    if (pc >= g_layout.heaps[h].low && pc < g_layout.heaps[h].high) return true;
  }
  return false;
}

bool JavaFrameTypes::InStub(uint64_t pc) {
  if (!InCodeCache(pc)) return false;
  struct Probe {
    uint64_t pc;
    bool stub;
  } probe{pc, false};
  FaultGuard::Run(
      [](void* state) {
        auto* probe = static_cast<Probe*>(state);
        const Walker walker(g_layout, Walker::Mode::kType, nullptr, nullptr, Start::kInterrupted,
                            nullptr, 0);
        probe->stub = walker.InStub(probe->pc);
      },
      &probe);
  return probe.stub;
}

int JavaFrameTypes::Assign(const char* java_thread, const void* ucontext, RawFrame* frames,
                           int count) {
  if (java_thread == nullptr || count <= 0 || !g_ready.load(std::memory_order_acquire)) return 0;
  Walker walker(g_layout, Walker::Mode::kType, java_thread, ucontext, Start::kInterrupted, frames,
                count);
  FaultGuard::Run([](void* state) { static_cast<Walker*>(state)->Walk(); }, &walker);
  return walker.done();
}

int JavaFrameTypes::Walk(const char* java_thread, const void* ucontext, RawFrame* frames,
                         int max_depth, Start start) {
  if (java_thread == nullptr || max_depth <= 0 || !g_ready.load(std::memory_order_acquire) ||
      !g_layout.walks) {
    return 0;
  }
  Walker walker(g_layout, Walker::Mode::kProduce, java_thread, ucontext, start, frames, max_depth);
  const bool finished =
      FaultGuard::Run([](void* state) { static_cast<Walker*>(state)->Walk(); }, &walker);
  return finished && walker.complete() ? walker.done() : 0;
}

}  // namespace ctxprof
