#include "profiler/sampler/stack_walker.h"

#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <libunwind.h>
#include <link.h>

#include <mutex>

#include "profiler/sampler/cfi_registry.h"
#include "profiler/sampler/fault_guard.h"
#include "profiler/sampler/machine_context.h"

namespace ctxprof {

namespace {

// The executable segments of the shared object this code is in; [0, 0) when it is linked into
// the program itself. Written once (FindOwnCode, under std::call_once in Init) before any
// session activates the handler; the handler's activation orders these writes before its reads.
uintptr_t g_own_code_begin = 0;
uintptr_t g_own_code_end = 0;

struct OwnObjectSearch {
  uintptr_t base;     // load base of the object holding this code (dladdr)
  bool first = true;  // dl_iterate_phdr reports the program itself first
};

int FindOwnSegments(dl_phdr_info* info, size_t, void* data) {
  OwnObjectSearch* search = static_cast<OwnObjectSearch*>(data);
  const bool program = search->first;
  search->first = false;
  if (info->dlpi_addr != search->base) return 0;
  if (program) return 1;  // linked into the program: its code is not ours to hide
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    if (segment.p_type != PT_LOAD || (segment.p_flags & PF_X) == 0) continue;
    const uintptr_t begin = info->dlpi_addr + segment.p_vaddr;
    const uintptr_t end = begin + segment.p_memsz;
    if (g_own_code_end == 0 || begin < g_own_code_begin) g_own_code_begin = begin;
    if (end > g_own_code_end) g_own_code_end = end;
  }
  return 1;
}

// Our code runs on the application's threads in hooks (a JVMTI callback, the Unsafe.park
// rebinding, a Java API call), where a sample can interrupt it or walk through it. Statically
// linked into a native program, our code is the program's: only the handler's frames, which no
// walk starts in (it starts at the interrupted context), are ours to hide there.
void FindOwnCode() {
  Dl_info self;
  if (dladdr(reinterpret_cast<void*>(&FindOwnCode), &self) == 0 || self.dli_fbase == nullptr) {
    return;
  }
  OwnObjectSearch search{reinterpret_cast<uintptr_t>(self.dli_fbase)};
  dl_iterate_phdr(FindOwnSegments, &search);
}

// Drops the frames in our own code, keeping the order of the rest.
int WithoutOwnFrames(RawFrame* frames, int count) {
  if (g_own_code_end == 0) return count;
  int kept = 0;
  for (int i = 0; i < count; i++) {
    const uintptr_t pc = static_cast<uintptr_t>(frames[i].id);
    if (pc >= g_own_code_begin && pc < g_own_code_end) continue;
    frames[kept++] = frames[i];
  }
  return kept;
}

}  // namespace

Status StackWalker::Init(Method method) {
  Status guard = FaultGuard::Install();
  if (!guard.ok()) return guard;
  static std::once_flag own_code_once;
  std::call_once(own_code_once, FindOwnCode);
  if (method == Method::kDwarf) CfiRegistry::Refresh();
  if (method == Method::kLibunwind) {
    static std::once_flag once;
    std::call_once(once, [] {
      unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_GLOBAL);
      ucontext_t context;
      getcontext(&context);
      RawFrame frames[8];
      bool truncated = false;
      Walk(&context, frames, 8, &truncated, Method::kLibunwind);
    });
  }
  return Status();
}

void StackWalker::RefreshTables() { CfiRegistry::Refresh(); }

int StackWalker::Walk(void* ucontext, RawFrame* frames, int max_depth, bool* truncated,
                      Method method) {
  int count = 0;
  switch (method) {
    case Method::kDwarf:
      count = WalkDwarf(ucontext, frames, max_depth, truncated);
      break;
    case Method::kLibunwind:
      count = WalkLibunwind(ucontext, frames, max_depth, truncated);
      break;
    case Method::kFramePointer:
      count = WalkFramePointers(ucontext, frames, max_depth, truncated);
      break;
  }
  return WithoutOwnFrames(frames, count);
}

namespace {

// What a guarded walk produces. It lives in the walker's frame, so the frames completed before
// a fault are still counted when FaultGuard::Run returns false.
struct WalkState {
  void* ucontext;
  RawFrame* frames;
  int max_depth;
  int count;
  bool truncated;
  CfiRegistry::Reader* tables;  // kDwarf only
};

// How far above the interrupted sp a stack slot may lie: more than any thread's stack (-Xss and
// ulimit -s stay far below), far less than the distance to a wild pointer's typical target.
constexpr uintptr_t kMaxStackBytes = uintptr_t{1} << 30;

// One word of stack memory, at most kMaxStackBytes above `stack_low` (the interrupted sp of the
// stack being walked). Only called inside FaultGuard::Run. A misaligned slot is taken as a
// corrupt frame (no x86-64 or AArch64 code saves registers at misaligned addresses), one out of
// the window as a wild pointer: not read at all, since some faults cannot be recovered from
// (under TSan, a fault in a handler TSan deferred, whose context is stale, ends the process).
CTXPROF_READS_FOREIGN_MEMORY bool LoadStackWord(uintptr_t stack_low, uintptr_t address,
                                                uintptr_t* value) {
  if ((address & (sizeof(uintptr_t) - 1)) != 0) return false;
  if (address < stack_low || address - stack_low >= kMaxStackBytes) return false;
  *value = *reinterpret_cast<const volatile uintptr_t*>(address);
  return true;
}

// Follows the unwind tables (cfi_registry.h) from the interrupted frame. Each step computes the
// CFA from the row covering the pc (the interrupted pc itself; a return address minus one, the
// call instruction, so that a call ending a function finds that function's row), reads the
// return address and the caller's fp where the row says, and continues with sp = CFA. A step
// that does not move up the stack, an unknown pc or a row that cannot be followed ends the walk
// truncated; an undefined return address (the thread's root frame) or a zero one ends it
// complete. A signal return trampoline continues with the registers of the context the kernel
// saved, so a walk from a handler that interrupted another handler reaches the first one's
// interrupted code.
void StepWithTables(void* opaque) {
  WalkState& state = *static_cast<WalkState*>(opaque);
  const MachineContext context(state.ucontext);
  uintptr_t pc = context.pc();
  uintptr_t sp = context.sp();
  uintptr_t fp = context.fp();
  uintptr_t stack_low = sp;
  bool fp_known = true;
  int32_t pc_kind = kNativeInterruptedPc;
  while (pc != 0) {
    if (state.count == state.max_depth) {
      state.truncated = true;
      return;
    }
    state.frames[state.count++] = {static_cast<uint64_t>(pc), pc_kind, FrameKind::kNative};
    const CfiRow* row = state.tables->Find(pc_kind == kNativeInterruptedPc ? pc : pc - 1);
    if (row == nullptr) {
      state.truncated = true;
      return;
    }
    uintptr_t cfa = 0;
    switch (row->rule) {
      case CfaRule::kSp:
        cfa = sp + row->cfa_offset;
        break;
      case CfaRule::kFp:
        if (!fp_known) {
          state.truncated = true;
          return;
        }
        cfa = fp + row->cfa_offset;
        break;
      case CfaRule::kPltStub:
        cfa = sp + row->cfa_offset + ((pc & 15) >= static_cast<uintptr_t>(row->fp_offset) ? 8 : 0);
        break;
      case CfaRule::kSignalFrame: {
        const uintptr_t saved = MachineContext::SignalFrameContext(sp);
        if ((saved & (alignof(ucontext_t) - 1)) != 0) {
          state.truncated = true;
          return;
        }
        const MachineContext interrupted(reinterpret_cast<void*>(saved));
        pc = interrupted.pc();
        sp = interrupted.sp();
        fp = interrupted.fp();
        stack_low = sp;  // the handler may have run on another stack (sigaltstack)
        fp_known = true;
        pc_kind = kNativeInterruptedPc;
        continue;
      }
      case CfaRule::kOutermost:
        return;
      case CfaRule::kNoInfo:
      case CfaRule::kUnsupported:
        state.truncated = true;
        return;
    }
    uintptr_t return_address = 0;
    if (cfa <= sp || !LoadStackWord(stack_low, cfa + row->return_address_offset, &return_address)) {
      state.truncated = true;
      return;
    }
    // A PLT stub leaves fp alone (its row's fp_offset is the stub's threshold).
    if (row->rule != CfaRule::kPltStub && row->fp_offset != CfiRow::kFpUnchanged) {
      if (row->fp_offset == CfiRow::kFpLost) {
        fp_known = false;
      } else if (LoadStackWord(stack_low, cfa + row->fp_offset, &fp)) {
        fp_known = true;
      } else {
        state.truncated = true;
        return;
      }
    }
    pc = return_address;
    sp = cfa;
    pc_kind = kNativeReturnAddress;
  }
}

// Follows the frame-pointer chain from the interrupted frame. A frame is [saved fp][return
// address] at fp. The chain must move up the stack and stay within kMaxFrameBytes of the
// previous frame; anything else is the end of the chain (the outermost frame has fp == 0) or a
// function that does not keep a frame pointer.
CTXPROF_READS_FOREIGN_MEMORY void FollowFramePointers(void* opaque) {
  WalkState& state = *static_cast<WalkState*>(opaque);
  constexpr uintptr_t kMaxFrameBytes = 1 << 20;
  const MachineContext context(state.ucontext);
  uintptr_t frame = context.fp();
  uintptr_t low = context.sp();
  while (frame >= low && frame - low <= kMaxFrameBytes && (frame & 7) == 0) {
    const auto* slots = reinterpret_cast<const volatile uintptr_t*>(frame);
    const uintptr_t next = slots[0];
    const uintptr_t return_address = slots[1];
    if (return_address == 0) break;
    if (state.count == state.max_depth) {
      state.truncated = true;
      break;
    }
    state.frames[state.count++] = {static_cast<uint64_t>(return_address), kNativeReturnAddress,
                                   FrameKind::kNative};
    if (next <= frame) break;
    low = frame + 2 * sizeof(uintptr_t);
    frame = next;
  }
}

// libunwind from the signal frame (UNW_INIT_SIGNAL_FRAME: the first frame is the interrupted pc,
// not a return address).
void StepWithLibunwind(void* opaque) {
  WalkState& state = *static_cast<WalkState*>(opaque);
  unw_cursor_t cursor;
  if (unw_init_local2(&cursor, static_cast<unw_context_t*>(state.ucontext), UNW_INIT_SIGNAL_FRAME) <
      0) {
    state.truncated = true;
    return;
  }
  while (true) {
    unw_word_t pc = 0;
    if (unw_get_reg(&cursor, UNW_REG_IP, &pc) < 0 || pc == 0) break;
    if (state.count == state.max_depth) {
      state.truncated = true;
      break;
    }
    const int index = state.count;
    state.frames[index] = {static_cast<uint64_t>(pc),
                           index == 0 ? kNativeInterruptedPc : kNativeReturnAddress,
                           FrameKind::kNative};
    state.count = index + 1;
    const int step = unw_step(&cursor);
    if (step == 0) break;  // the outermost frame
    if (step < 0) {
      state.truncated = true;
      break;
    }
  }
}

}  // namespace

int StackWalker::WalkFramePointers(void* ucontext, RawFrame* frames, int max_depth,
                                   bool* truncated) {
  *truncated = false;
  if (max_depth < 1) return 0;
  frames[0] = {static_cast<uint64_t>(MachineContext(ucontext).pc()), kNativeInterruptedPc,
               FrameKind::kNative};
  WalkState state{ucontext, frames, max_depth, 1, false, nullptr};
  *truncated = !FaultGuard::Run(&FollowFramePointers, &state) || state.truncated;
  return state.count;
}

int StackWalker::WalkDwarf(void* ucontext, RawFrame* frames, int max_depth, bool* truncated) {
  // Outside the guarded region: a fault must not skip the Reader's release.
  CfiRegistry::Reader tables;
  WalkState state{ucontext, frames, max_depth, 0, false, &tables};
  *truncated = !FaultGuard::Run(&StepWithTables, &state) || state.truncated;
  return state.count;
}

int StackWalker::WalkLibunwind(void* ucontext, RawFrame* frames, int max_depth, bool* truncated) {
  WalkState state{ucontext, frames, max_depth, 0, false, nullptr};
  *truncated = !FaultGuard::Run(&StepWithLibunwind, &state) || state.truncated;
  return state.count;
}

}  // namespace ctxprof
