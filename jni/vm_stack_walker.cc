#include "jni/vm_stack_walker.h"

#include <algorithm>
#include <atomic>

#include "jni/vm_layout.h"
#include "jni/vm_views.h"
#include "profiler/sampler/fault_guard.h"
#include "profiler/sampler/machine_context.h"

namespace ctxprof {
namespace {

constexpr uintptr_t kMaxStackStep = 16u << 20;
constexpr int kMaxNonJavaFrames = 64;             // stubs, adapters, C frames stepped over per walk
constexpr int32_t kSynchronizationEntryBci = -1;  // a synchronized method's entry scope

VmLayout g_layout;  // written by Init before g_ready (release); read after it (acquire)
std::atomic<bool> g_ready{false};

// One physical frame: where it executes and where its stack begins.
struct PhysicalFrame {
  uintptr_t pc;
  uintptr_t sp;
  uintptr_t unextended_sp;  // the sp the frame's own size is counted from
  uintptr_t fp;
};

// The Java physical frames of a thread's stack, innermost first, as both walks follow them:
// stubs, adapters and the call stub's entry frames are stepped over by their frame size (an
// entry frame continues at its JavaCallWrapper's anchor), C frames before the first Java frame
// by their frame-pointer link, a virtual thread's return barrier to its continuation's entry.
// Runs inside FaultGuard::Run (every accessor of the views reads VM or stack memory).
class JavaFrameCursor {
 public:
  // Where a step from one Java frame to the next ended.
  enum class Reached {
    kJavaFrame,
    kStackBottom,  // the thread's first entry frame: no Java frame below it
    kLost,         // a frame this walk cannot follow
  };

  // `ucontext` null: the thread is stopped in the VM at its anchor and the walk reports JVMTI's
  // vframes, not ASGCT's frames (VmStackWalker::WalkStopped). `leaf`: the caller's lookup of
  // one pc (VmStackWalker::Locate), or null.
  JavaFrameCursor(const VmLayout& layout, const char* thread, const void* ucontext,
                  VmStackWalker::Start start, const VmStackWalker::CodeAt* leaf)
      : l_(layout),
        thread_(layout, reinterpret_cast<uintptr_t>(thread)),
        ucontext_(ucontext),
        start_at_return_(start == VmStackWalker::Start::kReturnAddress),
        leaf_(leaf),
        code_cache_(layout),
        blob_(layout, 0, CodeKind::kUnknown) {}

  // Moves to the first Java frame; false when there is none this walk can follow. `vouching`
  // (Walk) also refuses the starts Walk leaves to ASGCT: a mounted virtual thread, whose frames
  // end at its continuation's entry, where ASGCT's walk differs between JDKs; code interrupted
  // before its frame is complete (its prologue, or a stub whose frame never is, such as the
  // safepoint handler blob saving the registers), whose return address may not be where its
  // frame size says (ASGCT's frame::safe_for_sender does not trust such a frame either).
  bool First(bool vouching) {
    const FrameAnchorView anchor = thread_.anchor();
    const uintptr_t anchor_sp = anchor.last_java_sp();
    const uintptr_t anchor_pc = anchor.last_java_pc();
    const int32_t state = thread_.state();
    const bool at_anchor = anchor_sp != 0 && anchor_pc != 0;
    if (at_anchor) {
      frame_ = {anchor_pc, anchor_sp, anchor_sp, anchor.last_java_fp()};
    } else {
      if (ucontext_ == nullptr) return false;  // stopped in the VM without a walkable anchor
      if (state != l_.java_thread.in_java && state != l_.java_thread.in_java_trans) {
        // Outside Java code with no last Java frame at all: ASGCT reports no Java frames for
        // such a thread (forte.cpp: no walkable anchor outside Java code; or too young, exiting,
        // in GC, in an unknown state). The one failure it could report instead, a thread in the
        // deoptimization handler, does not arise: the handler enters the VM only through calls
        // that set the anchor first.
        no_java_frames_ = anchor_sp == 0;
        return false;
      }
      const MachineContext registers(ucontext_);
      frame_ = {registers.pc(), registers.sp(), registers.sp(), registers.fp()};
    }
    // ASGCT trusts an initial interpreted frame as it is in these states only (forte.cpp,
    // is_decipherable_interpreted_frame); in others it checks the frame in ways this walk does
    // not.
    state_known_valid_ = state == l_.java_thread.in_native || state == l_.java_thread.in_vm ||
                         state == l_.java_thread.blocked;
    if (vouching && l_.continuations && thread_.cont_entry() != 0) return false;
    blob_ = leaf_ != nullptr && leaf_->pc == frame_.pc
                ? CodeBlobView(l_, leaf_->blob, static_cast<CodeKind>(leaf_->kind))
                : code_cache_.FindBlob(frame_.pc);
    while (blob_.kind() == CodeKind::kOutsideCodeCache) {
      if (++steps_ > kMaxNonJavaFrames || !Step(NativeSender())) return false;
      blob_ = code_cache_.FindBlob(frame_.pc);
    }
    if (vouching && !at_anchor && !start_at_return_ && steps_ == 0 &&
        (blob_.kind() == CodeKind::kStub || blob_.kind() == CodeKind::kCompiled) &&
        !blob_.FrameCompleteAt(frame_.pc)) {
      return false;
    }
    if (ToJavaFrame() != Reached::kJavaFrame) return false;
    // The first Java frame is stopped at a VM call when it is the anchor's frame itself
    // (forte.cpp compares the frame's pc with the anchor's). One reached through a stub has a
    // return address for pc too, but ASGCT looks it up as an interrupted pc; so do both walks.
    // A thread stopped in the VM is walked like JVMTI's vframes: every compiled frame's pc is
    // a call's return address, looked up exactly (compiledVFrame's scope_desc_at).
    pc_kind_ = ucontext_ == nullptr                  ? PcKind::kCaller
               : at_anchor && anchor_pc == frame_.pc ? PcKind::kStoppedAtCall
               : at_anchor || !start_at_return_      ? PcKind::kInterrupted
                                                     : PcKind::kCallSite;
    return true;
  }

  // Moves to the caller of the current Java frame, past stubs and entry frames.
  Reached Next() {
    pc_kind_ = PcKind::kCaller;
    if (!Step(AcrossReturnBarrier(JavaSender()))) return Reached::kLost;
    blob_ = code_cache_.FindBlob(frame_.pc);
    return ToJavaFrame();
  }

  const VmLayout& layout() const { return l_; }
  const PhysicalFrame& frame() const { return frame_; }
  const CodeBlobView& blob() const { return blob_; }
  PcKind pc_kind() const { return pc_kind_; }
  // The walk follows JVMTI's vframes (a thread stopped in the VM), not ASGCT's frames.
  bool vframes() const { return ucontext_ == nullptr; }
  // The thread's state lets ASGCT trust an initial interpreted frame as it is.
  bool state_known_valid() const { return state_known_valid_; }
  // First found the thread certainly has no Java frames (not merely a stack it cannot follow).
  bool no_java_frames() const { return no_java_frames_; }

 private:
  // Moves to `next` if it is plausible: up the stack, by less than kMaxStackStep.
  bool Step(const PhysicalFrame& next) {
    if (next.pc == 0 || next.sp <= frame_.sp || next.sp - frame_.sp >= kMaxStackStep ||
        next.sp % kWord != 0) {
      return false;
    }
    frame_ = next;
    return true;
  }

  // Steps over stubs and entry frames until the frame is a Java frame.
  Reached ToJavaFrame() {
    while (blob_.kind() == CodeKind::kStub) {
      if (++steps_ > kMaxNonJavaFrames) return Reached::kLost;
      PhysicalFrame next;
      if (frame_.pc == l_.call_stub_return) {
        // An entry frame: the Java frames before the VM call, if any, are at its anchor.
        const FrameAnchorView anchor = EntryFrameView(l_, frame_.fp).call_wrapper_anchor();
        next.sp = anchor.last_java_sp();
        if (next.sp == 0) return Reached::kStackBottom;  // the thread's first entry
        next.unextended_sp = next.sp;
        next.fp = anchor.last_java_fp();
        next.pc = anchor.last_java_pc();
        if (next.pc == 0) next.pc = VmRead<uintptr_t>(next.sp - kWord);
      } else {
        next = CompiledSender();
      }
      if (!Step(next)) return Reached::kLost;
      blob_ = code_cache_.FindBlob(frame_.pc);
    }
    return blob_.is_java() ? Reached::kJavaFrame : Reached::kLost;
  }

  // A virtual thread's frames are thawed onto the carrier's stack lazily: the lowest thawed
  // frame returns to the continuation's return barrier stub, and the frames below it are still
  // frozen in the heap. ASGCT does not walk those (HotSpot's continuation_bottom_sender): it
  // continues at the continuation's entry frame (Continuation.enterSpecial), which sits in the
  // ContinuationEntry on the carrier's stack. `sender` is the frame's sender by its frame size;
  // when it returns into a stub at or below the innermost entry, the entry frame is returned
  // instead.
  PhysicalFrame AcrossReturnBarrier(const PhysicalFrame& sender) const {
    if (!l_.continuations) return sender;
    const uintptr_t entry = thread_.cont_entry();
    if (entry == 0 || frame_.sp >= entry || sender.sp > entry + l_.cont_entry_size ||
        code_cache_.FindBlob(sender.pc).kind() != CodeKind::kStub) {
      return sender;
    }
    return {VmRead<uintptr_t>(l_.cont_entry_return_pc), entry, entry,
            VmRead<uintptr_t>(entry + l_.cont_entry_size)};
  }

  PhysicalFrame NativeSender() const {
    const uintptr_t sender_sp = frame_.fp + kSenderSpSlot * kWord;
    return {VmRead<uintptr_t>(frame_.fp + kReturnAddressSlot * kWord), sender_sp, sender_sp,
            VmRead<uintptr_t>(frame_.fp + kSavedFpSlot * kWord)};
  }

  PhysicalFrame CompiledSender() const {
    const int32_t words = blob_.frame_words();
    if (words <= 0) return {0, 0, 0, 0};
    const uintptr_t sender_sp = frame_.unextended_sp + static_cast<uintptr_t>(words) * kWord;
    return {VmRead<uintptr_t>(sender_sp - kWord), sender_sp, sender_sp,
            VmRead<uintptr_t>(sender_sp - 2 * kWord)};
  }

  PhysicalFrame JavaSender() const {
    if (blob_.kind() != CodeKind::kInterpreter) return CompiledSender();
    PhysicalFrame sender = NativeSender();
    sender.unextended_sp = InterpreterFrameView(l_, frame_.fp).sender_sp();
    return sender;
  }

  const VmLayout& l_;
  const JavaThreadView thread_;
  const void* const ucontext_;
  // The context's pc is a return address (VmStackWalker::Start::kReturnAddress); it matters
  // only when the walk starts there, not at the thread's anchor.
  const bool start_at_return_;
  const VmStackWalker::CodeAt* const leaf_;
  const CodeCacheView code_cache_;
  PhysicalFrame frame_{};
  CodeBlobView blob_;
  PcKind pc_kind_ = PcKind::kInterrupted;
  bool state_known_valid_ = false;
  bool no_java_frames_ = false;
  int steps_ = 0;  // non-Java frames stepped over
};

// Calls per_frame(cursor, k) for each Java physical frame, k being the index of the first of
// `count` frames it accounts for; per_frame returns how many, or 0 to stop. *done counts the
// frames accounted for so far (it survives a fault). True when the walk reached the stack's
// bottom or `count` frames.
template <typename PerFrame>
bool ForEachJavaFrame(JavaFrameCursor* cursor, int count, int* done, PerFrame per_frame) {
  int k = 0;
  while (k < count) {
    const int frames = per_frame(*cursor, k);
    if (frames <= 0) return false;
    k += frames;
    *done = std::min(k, count);
    if (k >= count) break;
    const JavaFrameCursor::Reached reached = cursor->Next();
    if (reached == JavaFrameCursor::Reached::kLost) return false;
    if (reached == JavaFrameCursor::Reached::kStackBottom) break;
  }
  return true;
}

// The kinds of frames[k..) that the cursor's physical frame accounts for; returns how many, or 0
// when its method is not the one ASGCT reported (the walks went apart). A compiled frame accounts
// for one frame per scope of its PcDesc (the inner ones inlined), at least one.
int AssignFrameKinds(const JavaFrameCursor& cursor, RawFrame* frames, int count, int k) {
  const VmLayout& l = cursor.layout();
  const CodeBlobView& blob = cursor.blob();
  int scopes = 1;
  uintptr_t method;
  if (blob.kind() == CodeKind::kInterpreter) {
    method = InterpreterFrameView(l, cursor.frame().fp).method();
  } else {
    const NmethodView nmethod(l, blob.start());
    method = nmethod.method();
    if (blob.kind() == CodeKind::kCompiled) {
      const int limit = count - k + 1;
      int found = 0;
      for (ScopeDescView scope = nmethod.FirstScope(cursor.frame().pc, cursor.pc_kind());
           scope.exists() && found < limit; scope = scope.sender()) {
        found++;
      }
      scopes = std::max(found, 1);
    }
  }
  const int last = k + scopes - 1;
  if (last < count && !MethodView(l, method).IsJmethodId(frames[last].id)) return 0;
  for (int i = k; i <= last && i < count; i++) {
    FrameKind& kind = frames[i].kind;
    if (kind == FrameKind::kJavaNative) continue;  // ASGCT's native method mark stays
    kind = blob.kind() == CodeKind::kInterpreter ? FrameKind::kJavaInterpreted
           : i < last                            ? FrameKind::kJavaInlined
                                                 : FrameKind::kJavaJit;
  }
  return scopes;
}

// Writes `method`'s frame as ASGCT's frame converted by JavaStackWalker: its jmethodID, and bci
// and kind, or -1 and kJavaNative for a native method (ASGCT's line -3). False when `method` has
// no jmethodID that leads back to it.
bool Emit(const VmLayout& l, uintptr_t method, int32_t bci, FrameKind kind, RawFrame* out) {
  const MethodView view(l, method);
  uintptr_t id;
  if (!view.FindJmethodId(&id)) return false;
  *out = view.is_native() ? RawFrame{id, -1, FrameKind::kJavaNative} : RawFrame{id, bci, kind};
  return true;
}

// The frames a walk writes for a compiled frame: what ProduceFrames decodes from the nmethod's
// PcDescs, scope stream, metadata and jmethodIDs, all fixed for one compilation, pc and reading.
// The key is the pc, the nmethod's compile id (unique per compilation: code freed and reused at
// the same address never matches), how the pc is looked up (PcKind: a return address exactly, an
// interrupted pc by the PcDesc after it...) and the reading (JVMTI's vframes or ASGCT's frames,
// which differ in a synchronized method's entry bci). A hot loop's interrupted pcs hit it as
// its callers' return addresses do. Each entry is a
// seqlock: a writer claims it by moving its version from even to odd (CAS), a release fence, then
// stores the key and frames (relaxed atomics) and publishes with the next even version (release);
// a reader loads the version (acquire), the words, then after an acquire fence the version again,
// and uses what it read only if both are the same even value. A writer stores frames it already
// decoded into the walk's output, so nothing it reads while an entry is odd can fault.
constexpr size_t kFrameCacheSlots = 1024;  // 156 KB of zero pages until used
constexpr int kFrameCacheDepth = 8;        // scopes; a frame with more inlined ones is not cached
struct CachedFrames {
  std::atomic<uint64_t> version{0};
  std::atomic<uint64_t> pc{0};
  std::atomic<uint64_t> key{0};  // FrameCacheKey
  std::atomic<uint64_t> ids[kFrameCacheDepth];
  std::atomic<uint64_t> bci_kinds[kFrameCacheDepth];  // uint32 bci << 8 | kind
};
CachedFrames g_frame_cache[kFrameCacheSlots];

CachedFrames& FrameCacheSlotOf(uintptr_t pc) {
  return g_frame_cache[(pc * 0x9E3779B97F4A7C15ull) >> 54];  // the top 10 bits
}

// Which compilation, lookup and reading an entry holds: compile id << 3 | PcKind << 1 | (1 for
// JVMTI's vframes).
uint64_t FrameCacheTag(int32_t compile_id, PcKind pc_kind, bool vframes) {
  return static_cast<uint64_t>(static_cast<uint32_t>(compile_id)) << 3 |
         static_cast<uint64_t>(pc_kind) << 1 | (vframes ? 1 : 0);
}

uint64_t FrameCacheKey(uint64_t tag, int count) { return tag << 8 | static_cast<uint64_t>(count); }

// Writes the cached frames of the compiled frame at `pc`, of the compilation, lookup and
// reading `tag` (FrameCacheTag), into out[0..room); their count in *written. False on a miss (out
// may then hold anything).
bool FindCachedFrames(uintptr_t pc, uint64_t tag, RawFrame* out, int room, int* written) {
  const CachedFrames& entry = FrameCacheSlotOf(pc);
  const uint64_t version = entry.version.load(std::memory_order_acquire);
  if (version % 2 != 0 || entry.pc.load(std::memory_order_relaxed) != pc) return false;
  const uint64_t key = entry.key.load(std::memory_order_relaxed);
  const int count = static_cast<int>(key & 0xff);
  if (key >> 8 != tag || count == 0 || count > kFrameCacheDepth) {
    return false;
  }
  const int n = std::min(count, room);
  for (int i = 0; i < n; i++) {
    const uint64_t bci_kind = entry.bci_kinds[i].load(std::memory_order_relaxed);
    out[i] = {entry.ids[i].load(std::memory_order_relaxed),
              static_cast<int32_t>(static_cast<uint32_t>(bci_kind >> 8)),
              static_cast<FrameKind>(bci_kind & 0xff)};
  }
  std::atomic_thread_fence(std::memory_order_acquire);
  if (entry.version.load(std::memory_order_relaxed) != version) return false;
  *written = n;
  return true;
}

// Caches frames[0..count), all the scopes of the compiled frame at `pc`; skipped when another
// thread is writing the entry.
void CacheFrames(uintptr_t pc, uint64_t tag, const RawFrame* frames, int count) {
  if (count <= 0 || count > kFrameCacheDepth) return;
  CachedFrames& entry = FrameCacheSlotOf(pc);
  uint64_t version = entry.version.load(std::memory_order_relaxed);
  if (version % 2 != 0 ||
      !entry.version.compare_exchange_strong(version, version + 1, std::memory_order_relaxed)) {
    return;
  }
  std::atomic_thread_fence(std::memory_order_release);
  entry.pc.store(pc, std::memory_order_relaxed);
  entry.key.store(FrameCacheKey(tag, count), std::memory_order_relaxed);
  for (int i = 0; i < count; i++) {
    entry.ids[i].store(frames[i].id, std::memory_order_relaxed);
    entry.bci_kinds[i].store(static_cast<uint64_t>(static_cast<uint32_t>(frames[i].bci)) << 8 |
                                 static_cast<uint8_t>(frames[i].kind),
                             std::memory_order_relaxed);
  }
  entry.version.store(version + 2, std::memory_order_release);
}

// Writes the frames of the cursor's physical frame from frames[k] as ASGCT would report them
// (forte.cpp, vframeStreamForte); returns how many, or 0 when it cannot vouch for them.
int ProduceFrames(const JavaFrameCursor& cursor, RawFrame* frames, int count, int k) {
  const VmLayout& l = cursor.layout();
  const CodeBlobView& blob = cursor.blob();
  RawFrame* out = frames + k;
  if (blob.kind() == CodeKind::kInterpreter) {
    if (cursor.pc_kind() != PcKind::kCaller && !cursor.state_known_valid()) return 0;
    const InterpreterFrameView frame(l, cursor.frame().fp);
    const MethodView method(l, frame.method());
    if (!MethodView::Plausible(method.address())) return 0;
    const int32_t bci = method.BciOf(frame.bcp());
    return Emit(l, method.address(), bci, FrameKind::kJavaInterpreted, out) ? 1 : 0;
  }
  const NmethodView nmethod(l, blob.start());
  const uintptr_t method = nmethod.method();
  // A native method's wrapper: its pc may be imprecise, so the vframe stream uses no scope.
  if (blob.kind() == CodeKind::kCompiledNative) {
    return Emit(l, method, 0, FrameKind::kJavaJit, out) ? 1 : 0;
  }
  // The same pc of the same compilation, looked up the same way, gives the same frames.
  const bool cacheable = l.nmethod.compile_id != 0;
  const uint64_t tag =
      cacheable ? FrameCacheTag(nmethod.compile_id(), cursor.pc_kind(), cursor.vframes()) : 0;
  const int room = count - k;
  int written = 0;
  if (cacheable && FindCachedFrames(cursor.frame().pc, tag, out, room, &written)) {
    return written;
  }
  ScopeDescView scope = nmethod.FirstScope(cursor.frame().pc, cursor.pc_kind());
  if (!scope.exists()) {
    // JVMTI's vframes always find one: a return address without a PcDesc is not a call's (a
    // deoptimized frame returns to its nmethod's deopt handler; the VM keeps the call's pc).
    if (cursor.vframes()) return 0;
    // ASGCT's: the method itself at bci 0 (vframeStreamCommon::fill_from_compiled_native_frame).
    return Emit(l, method, 0, FrameKind::kJavaJit, out) ? 1 : 0;
  }
  const NmethodView::Metadata metadata = nmethod.metadata();
  while (scope.exists() && written < room) {
    const ScopeDescView::Record record = scope.Read();
    if (record.method_index == 0) return 0;
    const FrameKind kind = record.sender > 0 ? FrameKind::kJavaInlined : FrameKind::kJavaJit;
    // JVMTI's compiledVFrame::bci reports a synchronized method's entry (the scope's bci -1,
    // HotSpot's SynchronizationEntryBCI) as bci 0; ASGCT reports the scope's own.
    const int32_t bci = cursor.vframes() && record.bci == kSynchronizationEntryBci ? 0 : record.bci;
    if (!Emit(l, metadata.MethodAt(record.method_index), bci, kind, out + written)) {
      return 0;
    }
    written++;
    scope = scope.At(record.sender);
  }
  // Only a whole frame (its outermost scope reached, not cut by `room`) is cached.
  if (cacheable && !scope.exists()) CacheFrames(cursor.frame().pc, tag, out, written);
  return written;
}

// A walk's state, kept in memory its caller owns so that a fault leaves what it completed.
struct WalkState {
  const char* thread;
  const void* ucontext;
  VmStackWalker::Start start;
  const VmStackWalker::CodeAt* leaf;
  RawFrame* frames;
  int count;
  int done = 0;
  bool complete = false;
  bool no_java_frames = false;
};

}  // namespace

StatusOr<VmStackWalker::Capabilities> VmStackWalker::Init(JNIEnv* jni) {
  if (g_ready.load(std::memory_order_acquire)) return Capabilities{};
  const Status guard = FaultGuard::Install();
  if (!guard.ok()) return guard;
  StatusOr<ResolvedVmLayout> resolved = ResolveVmLayout(jni);
  if (!resolved.ok()) return resolved.status();
  g_layout = resolved.value().layout;
  g_ready.store(true, std::memory_order_release);
  return Capabilities{resolved.value().walk};
}

bool VmStackWalker::InCodeCache(uint64_t pc) {
  return g_ready.load(std::memory_order_acquire) && CodeCacheView(g_layout).Contains(pc);
}

bool VmStackWalker::CodeAt::in_stub() const {
  return static_cast<CodeKind>(kind) == CodeKind::kStub;
}

VmStackWalker::CodeAt VmStackWalker::Locate(uint64_t pc) {
  CodeAt found;
  if (!InCodeCache(pc)) return found;
  found.pc = pc;
  // A fault leaves no answer (pc 0): Walk then looks the pc up itself.
  if (!FaultGuard::Run(
          [](void* state) {
            auto* at = static_cast<CodeAt*>(state);
            const CodeBlobView blob = CodeCacheView(g_layout).FindBlob(at->pc);
            at->blob = blob.start();
            at->kind = static_cast<uint8_t>(blob.kind());
          },
          &found)) {
    return CodeAt{};
  }
  return found;
}

int VmStackWalker::AssignKinds(const char* java_thread, const void* ucontext, RawFrame* frames,
                               int count) {
  if (java_thread == nullptr || count <= 0 || !g_ready.load(std::memory_order_acquire)) return 0;
  WalkState walk{java_thread, ucontext, Start::kInterrupted, nullptr, frames, count};
  FaultGuard::Run(
      [](void* state) {
        WalkState& w = *static_cast<WalkState*>(state);
        JavaFrameCursor cursor(g_layout, w.thread, w.ucontext, w.start, w.leaf);
        if (!cursor.First(/*vouching=*/false)) return;
        ForEachJavaFrame(&cursor, w.count, &w.done, [&w](const JavaFrameCursor& at, int k) {
          return AssignFrameKinds(at, w.frames, w.count, k);
        });
      },
      &walk);
  return walk.done;
}

int VmStackWalker::Walk(const char* java_thread, const void* ucontext, RawFrame* frames,
                        int max_depth, Start start, const CodeAt* leaf) {
  return ucontext != nullptr ? WalkFrom(java_thread, ucontext, start, leaf, frames, max_depth) : 0;
}

int VmStackWalker::WalkStopped(const char* java_thread, RawFrame* frames, int max_depth) {
  return WalkFrom(java_thread, nullptr, Start::kInterrupted, nullptr, frames, max_depth);
}

int VmStackWalker::WalkFrom(const char* java_thread, const void* ucontext, Start start,
                            const CodeAt* leaf, RawFrame* frames, int max_depth) {
  if (java_thread == nullptr || max_depth <= 0 || !g_ready.load(std::memory_order_acquire) ||
      !g_layout.walks) {
    return 0;
  }
  WalkState walk{java_thread, ucontext, start, leaf, frames, max_depth};
  const bool finished = FaultGuard::Run(
      [](void* state) {
        WalkState& w = *static_cast<WalkState*>(state);
        JavaFrameCursor cursor(g_layout, w.thread, w.ucontext, w.start, w.leaf);
        if (!cursor.First(/*vouching=*/true)) {
          w.no_java_frames = cursor.no_java_frames();
          return;
        }
        w.complete =
            ForEachJavaFrame(&cursor, w.count, &w.done, [&w](const JavaFrameCursor& at, int k) {
              return ProduceFrames(at, w.frames, w.count, k);
            });
      },
      &walk);
  if (!finished) return 0;
  if (walk.no_java_frames) return kNoJavaFrames;
  return walk.complete ? walk.done : 0;
}

}  // namespace ctxprof
