#include "jni/vm_layout.h"

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <string>

#include "jni/vm_structs.h"
#include "profiler/sampler/fault_guard.h"

namespace ctxprof {
namespace {

constexpr uintptr_t kWord = sizeof(uintptr_t);
// AArch64 HotSpot does not export frame::entry_frame_call_wrapper_offset; its value there.
constexpr int32_t kAarch64EntryFrameCallWrapperSlot = -8;
// JNI_VERSION_19 and JNI_VERSION_20 (GetVersion of those JDKs and later).
constexpr jint kJniVersion19 = 0x00130000;
constexpr jint kJniVersion20 = 0x00140000;

// Collects the offsets ResolveVmLayout needs and remembers the first that is missing.
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
  // kUnavailable with the first missing piece.
  Status status() const { return Status::Unavailable(error_, 0); }

 private:
  const VmStructs& tables_;
  std::string error_;
};

template <typename T>
T ReadVm(uintptr_t address) {
  T value;
  memcpy(&value, reinterpret_cast<const void*>(address), sizeof(T));
  return value;
}

// The union of the heaps' bounds, and whether it has a gap: walked in the order of the heaps'
// lows, the union is gapless when each heap starts at or below the highest high before it.
void SetCodeBounds(VmLayout* layout) {
  VmLayout::CodeHeap by_low[VmLayout::kMaxCodeHeaps];
  const int count = layout->heap_count;
  std::copy(layout->heaps, layout->heaps + count, by_low);
  std::sort(by_low, by_low + count,
            [](const VmLayout::CodeHeap& a, const VmLayout::CodeHeap& b) { return a.low < b.low; });
  layout->code_low = by_low[0].low;
  layout->code_high = by_low[0].high;
  layout->code_gapless = true;
  for (int i = 1; i < count; i++) {
    if (by_low[i].low > layout->code_high) layout->code_gapless = false;
    layout->code_high = std::max(layout->code_high, by_low[i].high);
  }
}

// The code heaps' bounds and segment maps: fixed once the code cache is initialised.
bool ReadCodeHeaps(LayoutReader* reader, VmLayout* layout) {
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
    VmLayout* layout;
    bool ok = false;
  } heaps{heaps_address, length, data, memory, segmap, log2_segment, low, high_boundary, layout};
  // The VM's own memory, but read through offsets that came from its tables: guarded anyway.
  const bool read = FaultGuard::Run(
      [](void* state) {
        Heaps& h = *static_cast<Heaps*>(state);
        const auto array = ReadVm<uintptr_t>(reinterpret_cast<uintptr_t>(h.address));
        if (array == 0) return;
        const int count = ReadVm<int32_t>(array + h.length);
        const auto elements = ReadVm<uintptr_t>(array + h.data);
        if (count <= 0 || count > VmLayout::kMaxCodeHeaps || elements == 0) return;
        for (int i = 0; i < count; i++) {
          const auto heap = ReadVm<uintptr_t>(elements + i * kWord);
          VmLayout::CodeHeap& bounds = h.layout->heaps[i];
          bounds.low = ReadVm<uintptr_t>(heap + h.memory + h.low);
          bounds.high = ReadVm<uintptr_t>(heap + h.memory + h.high_boundary);
          bounds.segmap = ReadVm<uintptr_t>(heap + h.segmap + h.low);
          bounds.log2_segment = ReadVm<int32_t>(heap + h.log2_segment);
          if (bounds.low == 0 || bounds.high <= bounds.low || bounds.segmap == 0 ||
              bounds.log2_segment < 4 || bounds.log2_segment > 16) {
            return;
          }
        }
        h.layout->heap_count = count;
        h.ok = true;
      },
      &heaps);
  if (!read || !heaps.ok) return reader->Fail("the code cache's heaps could not be read");
  SetCodeBounds(layout);
  return true;
}

// The code blob, nmethod and PcDesc fields: where a pc's frame and scopes are.
bool ResolveCode(LayoutReader* reader, VmLayout* layout) {
  LayoutReader& r = *reader;
  VmLayout& l = *layout;
  uint64_t header = 0, used = 0;
  bool ok = r.Size("HeapBlock", &l.heap_block_size) &&
            r.Offset("HeapBlock", "_header", {"HeapBlock::Header"}, &header) &&
            r.Offset("HeapBlock::Header", "_used", {"bool"}, &used) &&
            r.Offset("CodeBlob", "_name", {"const char*"}, &l.code_blob.name) &&
            r.Offset("CodeBlob", "_size", {"int"}, &l.code_blob.size) &&
            r.Offset("CodeBlob", "_frame_size", {"int"}, &l.code_blob.frame_size);
  l.heap_block_used = header + used;
  // The code start: a pointer field up to JDK 21, an offset from the blob since JDK 23.
  l.code_blob.code_begin_is_offset = r.Has("CodeBlob", "_code_offset");
  ok = ok && (l.code_blob.code_begin_is_offset
                  ? r.Offset("CodeBlob", "_code_offset", {"int"}, &l.code_blob.code_begin)
                  : r.Offset("CodeBlob", "_code_begin", {"address"}, &l.code_blob.code_begin));
  // nmethod::_method since JDK 23 (CompiledMethod was folded into nmethod), CompiledMethod before.
  const char* method_owner = r.Has("nmethod", "_method") ? "nmethod" : "CompiledMethod";
  ok = ok && r.Offset(method_owner, "_method", {"Method*"}, &l.nmethod.method);
  l.nmethod.scopes_in_immutable_data = r.Has("nmethod", "_immutable_data");
  if (l.nmethod.scopes_in_immutable_data) {
    ok = ok && r.Offset("nmethod", "_immutable_data", {"address"}, &l.nmethod.immutable_data) &&
         r.Offset("nmethod", "_scopes_pcs_offset", {"int"}, &l.nmethod.pcs_begin) &&
         r.Offset("nmethod", "_scopes_data_offset", {"int"}, &l.nmethod.pcs_end);
    l.nmethod.scopes_begin = l.nmethod.pcs_end;
  } else {
    const char* scopes_owner =
        r.Has("CompiledMethod", "_scopes_data_begin") ? "CompiledMethod" : "nmethod";
    ok = ok && r.Offset("nmethod", "_scopes_pcs_offset", {"int"}, &l.nmethod.pcs_begin) &&
         r.Offset("nmethod", "_dependencies_offset", {"int"}, &l.nmethod.pcs_end) &&
         r.Offset(scopes_owner, "_scopes_data_begin", {"address"}, &l.nmethod.scopes_begin);
  }
  // Optional: names a compilation for VmStackWalker's cache of compiled frames.
  if (r.Has("nmethod", "_compile_id") && r.FieldType("nmethod", "_compile_id") == "int") {
    ok = ok && r.Offset("nmethod", "_compile_id", {"int"}, &l.nmethod.compile_id);
  }
  return ok && r.Size("PcDesc", &l.pc_desc.size) &&
         r.Offset("PcDesc", "_pc_offset", {"int"}, &l.pc_desc.pc_offset) &&
         r.Offset("PcDesc", "_scope_decode_offset", {"int"}, &l.pc_desc.scope_offset);
}

// The thread, its frame anchor and the frames a walk steps through to reach the Java frames
// (entry frames, interpreter frames, continuation entries).
bool ResolveThread(const VmStructs& tables, LayoutReader* reader, VmLayout* layout) {
  LayoutReader& r = *reader;
  VmLayout& l = *layout;
  bool ok = r.Offset("JavaThread", "_thread_state", {"JavaThreadState"}, &l.java_thread.state) &&
            r.Constant("_thread_in_Java", &l.java_thread.in_java) &&
            r.Constant("_thread_in_Java_trans", &l.java_thread.in_java_trans) &&
            r.Offset("JavaThread", "_anchor", {"JavaFrameAnchor"}, &l.java_thread.anchor) &&
            r.Offset("JavaFrameAnchor", "_last_Java_sp", {"intptr_t*"}, &l.frame_anchor.sp) &&
            r.Offset("JavaFrameAnchor", "_last_Java_pc", {"address"}, &l.frame_anchor.pc) &&
            r.Offset("JavaFrameAnchor", "_last_Java_fp", {"intptr_t*"}, &l.frame_anchor.fp) &&
            r.Offset("JavaCallWrapper", "_anchor", {"JavaFrameAnchor"}, &l.call_wrapper_anchor) &&
            r.Constant("frame::interpreter_frame_sender_sp_offset", &l.interpreter_sender_sp_slot);
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
         r.Offset("JavaThread", "_cont_entry", {"ContinuationEntry*"}, &l.java_thread.cont_entry) &&
         r.Static("ContinuationEntry", "_return_pc", &return_pc) &&
         r.Size("ContinuationEntry", &l.cont_entry_size);
    l.cont_entry_return_pc = reinterpret_cast<uintptr_t>(return_pc);
  }
  const void* call_stub_return = nullptr;
  ok = ok && r.Static("StubRoutines", "_call_stub_return_address", &call_stub_return);
  if (ok) l.call_stub_return = ReadVm<uintptr_t>(reinterpret_cast<uintptr_t>(call_stub_return));
  return ok;
}

// The fields Walk needs beyond the typing walk's. False with the reader's status naming the
// first that is missing.
bool ResolveWalk(LayoutReader* reader, VmLayout* layout) {
  LayoutReader& r = *reader;
  VmLayout& l = *layout;
  bool ok =
      r.Offset("Method", "_constMethod", {"ConstMethod*"}, &l.method.const_method) &&
      r.Offset("Method", "_access_flags", {"AccessFlags"}, &l.method.access_flags) &&
      r.Size("ConstMethod", &l.const_method.size) &&
      r.Offset("ConstMethod", "_constants", {"ConstantPool*"}, &l.const_method.constants) &&
      r.Offset("ConstMethod", "_code_size", {"u2"}, &l.const_method.code_size) &&
      r.Offset("ConstMethod", "_method_idnum", {"u2"}, &l.const_method.idnum) &&
      r.Offset("ConstantPool", "_pool_holder", {"InstanceKlass*"}, &l.constant_pool_holder) &&
      r.Offset("InstanceKlass", "_methods_jmethod_ids", {"jmethodID*"}, &l.klass_jmethod_ids) &&
      r.Constant("_thread_in_native", &l.java_thread.in_native) &&
      r.Constant("_thread_in_vm", &l.java_thread.in_vm) &&
      r.Constant("_thread_blocked", &l.java_thread.blocked);
  if (!ok) return false;
  // The frame-complete offset: an int up to JDK 21, an int16_t since JDK 23.
  if (!r.Offset("CodeBlob", "_frame_complete_offset", {"int", "int16_t"},
                &l.code_blob.frame_complete)) {
    return false;
  }
  l.code_blob.frame_complete_bytes =
      r.FieldType("CodeBlob", "_frame_complete_offset") == "int" ? 4 : 2;
  // The metadata: at an int offset from the nmethod up to JDK 21; after the relocations in the
  // mutable data since JDK 25 (JDK 23 and 24 place it otherwise, and are not read).
  if (r.Has("nmethod", "_metadata_offset")) {
    return r.Offset("nmethod", "_metadata_offset", {"int"}, &l.nmethod.metadata);
  }
  l.nmethod.metadata_in_mutable_data = true;
  return r.Offset("CodeBlob", "_mutable_data", {"address"}, &l.code_blob.mutable_data) &&
         r.Offset("CodeBlob", "_relocation_size", {"int"}, &l.code_blob.relocation_size);
}

}  // namespace

StatusOr<ResolvedVmLayout> ResolveVmLayout(JNIEnv* jni) {
  StatusOr<VmStructs> opened = VmStructs::Open(jni);
  if (!opened.ok()) return opened.status();
  const VmStructs& tables = opened.value();
  LayoutReader r(tables);
  ResolvedVmLayout resolved;
  VmLayout& l = resolved.layout;
  bool ok = ResolveCode(&r, &l) && ResolveThread(tables, &r, &l) && ReadCodeHeaps(&r, &l);
  if (ok && (l.pc_desc.size < l.pc_desc.pc_offset + 4 ||
             l.pc_desc.size < l.pc_desc.scope_offset + 4 || l.call_stub_return == 0)) {
    ok = r.Fail("the VM's PcDesc or call stub looks unexpected");
  }
  if (!ok) return r.status();
  l.unsigned5_excluded = jni->GetVersion() >= kJniVersion20 ? 1 : 0;
  LayoutReader walk(tables);
  l.walks = ResolveWalk(&walk, &l);
  if (!l.walks) {
    resolved.walk = walk.status();
  } else if (!l.continuations && jni->GetVersion() >= kJniVersion19) {
    // Virtual threads without JavaThread::_cont_entry (JDK 19-21): Walk could not tell a
    // mounted virtual thread, whose stacks it leaves to ASGCT.
    l.walks = false;
    resolved.walk = Status::Unavailable(
        "this JDK has virtual threads but does not export JavaThread::_cont_entry", 0);
  }
  return resolved;
}

}  // namespace ctxprof
