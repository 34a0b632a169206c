#include "profiler/sampler/stack_walker.h"

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <mutex>

#include "profiler/sampler/fault_guard.h"
#include "profiler/sampler/machine_context.h"

namespace ctxprof {

Status StackWalker::Init() {
  Status guard = FaultGuard::Install();
  if (!guard.ok()) return guard;
  static std::once_flag once;
  std::call_once(once, [] {
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_GLOBAL);
    ucontext_t context;
    getcontext(&context);
    RawFrame frames[8];
    bool truncated = false;
    Walk(&context, frames, 8, &truncated);
  });
  return Status();
}

int StackWalker::Walk(void* ucontext, RawFrame* frames, int max_depth, bool* truncated,
                      Method method) {
  return method == Method::kFramePointer ? WalkFramePointers(ucontext, frames, max_depth, truncated)
                                         : WalkDwarf(ucontext, frames, max_depth, truncated);
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
};

// Follows the frame-pointer chain from the interrupted frame. A frame is [saved fp][return
// address] at fp. The chain must move up the stack and stay within kMaxFrameBytes of the
// previous frame; anything else is the end of the chain (the outermost frame has fp == 0) or a
// function that does not keep a frame pointer.
void FollowFramePointers(void* opaque) {
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
  WalkState state{ucontext, frames, max_depth, 1, false};
  *truncated = !FaultGuard::Run(&FollowFramePointers, &state) || state.truncated;
  return state.count;
}

int StackWalker::WalkDwarf(void* ucontext, RawFrame* frames, int max_depth, bool* truncated) {
  WalkState state{ucontext, frames, max_depth, 0, false};
  *truncated = !FaultGuard::Run(&StepWithLibunwind, &state) || state.truncated;
  return state.count;
}

}  // namespace ctxprof
