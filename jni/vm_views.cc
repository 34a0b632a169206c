#include "jni/vm_views.h"

#include <algorithm>
#include <atomic>

namespace ctxprof {
namespace {

constexpr int kMaxSegmentHops = 1 << 16;
constexpr uint8_t kFreeSegment = 0xFF;
constexpr uint32_t kUnsigned5LowBytes = 192;  // a byte below this ends an UNSIGNED5 integer
constexpr uint16_t kAccNative = 0x0100;       // JVM_ACC_NATIVE, the class file's flag

bool NameIs(uintptr_t name, const char* expected) {
  size_t i = 0;
  for (; expected[i] != '\0'; i++) {
    if (VmRead<char>(name + i) != expected[i]) return false;
  }
  return VmRead<char>(name + i) == '\0';
}

// The names of the blobs the walks tell apart. HotSpot names these kinds with string constants of
// libjvm, one address for every blob of a kind: once the name at an address compared equal, that
// address alone identifies the kind (libjvm's constants neither move nor change), which spares
// every later lookup reading the string (a cache miss per frame of a walk). Lock-free: each address
// is one relaxed word, 0 until learned; a stale read only costs the string comparison.
struct BlobName {
  const char* text;
  CodeKind kind;
  std::atomic<uintptr_t> address;
};
BlobName g_blob_names[] = {{"nmethod", CodeKind::kCompiled, {0}},
                           {"native nmethod", CodeKind::kCompiledNative, {0}},
                           {"Interpreter", CodeKind::kInterpreter, {0}}};

// The kind of a blob named by the string at `name` (not null).
CodeKind KindOfName(uintptr_t name) {
  for (const BlobName& known : g_blob_names) {
    if (known.address.load(std::memory_order_relaxed) == name) return known.kind;
  }
  for (BlobName& known : g_blob_names) {
    if (NameIs(name, known.text)) {
      known.address.store(name, std::memory_order_relaxed);
      return known.kind;
    }
  }
  return CodeKind::kStub;
}

// Method* -> jmethodID: a direct-mapped table every handler reads and fills, so that a hot
// method costs a lookup instead of its chain of five dependent loads (ConstMethod, constant
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

}  // namespace

bool CodeCacheView::Contains(uintptr_t pc) const {
  if (pc < l_->code_low || pc >= l_->code_high) return false;
  if (l_->code_gapless) return true;
  for (int h = 0; h < l_->heap_count; h++) {
    if (pc >= l_->heaps[h].low && pc < l_->heaps[h].high) return true;
  }
  return false;
}

// The segment map's hop counts lead back to the block's first segment.
CodeBlobView CodeCacheView::FindBlob(uintptr_t pc) const {
  if (pc < l_->code_low || pc >= l_->code_high) return {*l_, 0, CodeKind::kOutsideCodeCache};
  for (int h = 0; h < l_->heap_count; h++) {
    const VmLayout::CodeHeap& heap = l_->heaps[h];
    if (pc < heap.low || pc >= heap.high) continue;
    const CodeBlobView unknown(*l_, 0, CodeKind::kUnknown);
    uintptr_t segment = (pc - heap.low) >> heap.log2_segment;
    uint8_t hop = VmRead<uint8_t>(heap.segmap + segment);
    if (hop == kFreeSegment) return unknown;
    for (int i = 0; hop != 0; i++) {
      if (i == kMaxSegmentHops || hop > segment) return unknown;
      segment -= hop;
      hop = VmRead<uint8_t>(heap.segmap + segment);
    }
    const uintptr_t block = heap.low + (segment << heap.log2_segment);
    if (VmRead<uint8_t>(block + l_->heap_block_used) == 0) return unknown;
    const uintptr_t blob = block + l_->heap_block_size;
    const int32_t size = VmRead<int32_t>(blob + l_->code_blob.size);
    if (size <= 0 || pc >= blob + static_cast<uintptr_t>(size)) return unknown;
    const auto name = VmRead<uintptr_t>(blob + l_->code_blob.name);
    return {*l_, blob, name == 0 ? CodeKind::kStub : KindOfName(name)};
  }
  return {*l_, 0, CodeKind::kOutsideCodeCache};
}

uint32_t ScopeDescView::ReadUnsigned5(uintptr_t* position) const {
  const uint32_t excluded = l_->unsigned5_excluded;
  uint32_t byte = VmRead<uint8_t>((*position)++);
  uint32_t value = byte - excluded;
  for (int shift = 6; byte >= kUnsigned5LowBytes && shift <= 24; shift += 6) {
    byte = VmRead<uint8_t>((*position)++);
    value += (byte - excluded) << shift;
  }
  return value;
}

ScopeDescView::Record ScopeDescView::Read() const {
  uintptr_t position = stream_ + static_cast<uint32_t>(offset_);
  Record record;
  record.sender = static_cast<int32_t>(ReadUnsigned5(&position));
  record.method_index = ReadUnsigned5(&position);
  record.bci = static_cast<int32_t>(ReadUnsigned5(&position)) - 1;
  return record;
}

// The PcDesc ASGCT's vframe stream would use. A caller: the exact PcDesc of its return address.
// The first frame (forte.cpp, is_decipherable_compiled_frame): stopped at a VM call, the exact
// PcDesc, else the first one after pc; interrupted, the first one after pc, else the exact one
// at pc; at a call site, the PcDesc at or after the return address (VmStackWalker::Start), else
// the first one after it.
ScopeDescView NmethodView::FirstScope(uintptr_t pc, PcKind kind) const {
  const uintptr_t nmethod = blob_.start();
  uintptr_t pcs_begin, pcs_end, scopes;
  if (l_->nmethod.scopes_in_immutable_data) {
    const auto data = VmRead<uintptr_t>(nmethod + l_->nmethod.immutable_data);
    pcs_begin = data + VmRead<int32_t>(nmethod + l_->nmethod.pcs_begin);
    pcs_end = data + VmRead<int32_t>(nmethod + l_->nmethod.pcs_end);
    scopes = pcs_end;
  } else {
    pcs_begin = nmethod + VmRead<int32_t>(nmethod + l_->nmethod.pcs_begin);
    pcs_end = nmethod + VmRead<int32_t>(nmethod + l_->nmethod.pcs_end);
    scopes = VmRead<uintptr_t>(nmethod + l_->nmethod.scopes_begin);
  }
  const uintptr_t code = blob_.code_begin();
  if (pc < code || pc - code >= (1u << 30)) return {*l_, scopes, 0};
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
  return {*l_, scopes, std::max(scope, 0)};
}

// The first PcDesc whose offset is >= `pc_offset`, by binary search. The first and the last
// PcDesc are HotSpot's sentinels and never match.
int32_t NmethodView::ScopeOffsetAt(uintptr_t begin, uintptr_t end, int32_t pc_offset,
                                   bool exact) const {
  const uint64_t size = l_->pc_desc.size;
  if (end < begin || (end - begin) / size < 3) return 0;
  size_t low = 1, high = (end - begin) / size - 1;  // search [low, high)
  while (low < high) {
    const size_t middle = low + (high - low) / 2;
    if (VmRead<int32_t>(begin + middle * size + l_->pc_desc.pc_offset) < pc_offset) {
      low = middle + 1;
    } else {
      high = middle;
    }
  }
  if (low == (end - begin) / size - 1) return 0;
  const uintptr_t desc = begin + low * size;
  if (exact && VmRead<int32_t>(desc + l_->pc_desc.pc_offset) != pc_offset) return 0;
  return VmRead<int32_t>(desc + l_->pc_desc.scope_offset);
}

NmethodView::Metadata NmethodView::metadata() const {
  const uintptr_t nmethod = blob_.start();
  if (l_->nmethod.metadata_in_mutable_data) {
    return Metadata(VmRead<uintptr_t>(nmethod + l_->code_blob.mutable_data) +
                    VmRead<int32_t>(nmethod + l_->code_blob.relocation_size));
  }
  return Metadata(nmethod + VmRead<int32_t>(nmethod + l_->nmethod.metadata));
}

bool MethodView::is_native() const {
  return (VmRead<uint16_t>(at_ + l_->method.access_flags) & kAccNative) != 0;
}

int32_t MethodView::BciOf(uintptr_t bcp) const {
  const auto const_method = VmRead<uintptr_t>(at_ + l_->method.const_method);
  const uintptr_t code = const_method + l_->const_method.size;
  const uint16_t code_size = VmRead<uint16_t>(const_method + l_->const_method.code_size);
  return bcp >= code && bcp - code < code_size ? static_cast<int32_t>(bcp - code) : 0;
}

bool MethodView::FindJmethodId(uintptr_t* out) const {
  if (!Plausible(at_)) return false;
  MethodIdSlot& slot = MethodIdSlotOf(at_);
  uintptr_t id = 0;
  if (slot.method.load(std::memory_order_relaxed) == at_) {
    id = slot.id.load(std::memory_order_relaxed);
    if (!IsJmethodId(id)) id = 0;
  }
  if (id == 0) {
    if (!LookUpJmethodId(&id)) return false;
    slot.method.store(at_, std::memory_order_relaxed);
    slot.id.store(id, std::memory_order_relaxed);
  }
  *out = id;
  return true;
}

bool MethodView::LookUpJmethodId(uintptr_t* out) const {
  const auto const_method = VmRead<uintptr_t>(at_ + l_->method.const_method);
  if (!Plausible(const_method)) return false;
  const auto constants = VmRead<uintptr_t>(const_method + l_->const_method.constants);
  if (!Plausible(constants)) return false;
  const auto holder = VmRead<uintptr_t>(constants + l_->constant_pool_holder);
  if (!Plausible(holder)) return false;
  const auto ids = VmRead<uintptr_t>(holder + l_->klass_jmethod_ids);
  if (ids == 0 || ids % kWord != 0) return false;
  const uint16_t idnum = VmRead<uint16_t>(const_method + l_->const_method.idnum);
  if (idnum >= VmRead<uintptr_t>(ids)) return false;  // ids[0] holds the array's length
  const auto id = VmRead<uintptr_t>(ids + (idnum + 1u) * kWord);
  if (!IsJmethodId(id)) return false;
  *out = id;
  return true;
}

}  // namespace ctxprof
