#include "profiler/sampler/stack_walker.h"

#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <setjmp.h>
#include <ucontext.h>

#include <mutex>

#include "profiler/sampler/fault_guard.h"

namespace ctxprof {

bool StackWalker::Init(std::string* error) {
  if (!FaultGuard::Install(error)) return false;
  static std::once_flag once;
  std::call_once(once, [] {
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_GLOBAL);
    ucontext_t context;
    getcontext(&context);
    RawFrame frames[8];
    bool truncated = false;
    Walk(&context, frames, 8, &truncated);
  });
  return true;
}

int StackWalker::Walk(void* ucontext, RawFrame* frames, int max_depth, bool* truncated,
                      Method method) {
  return method == Method::kFramePointer ? WalkFramePointers(ucontext, frames, max_depth, truncated)
                                         : WalkDwarf(ucontext, frames, max_depth, truncated);
}

namespace {

// Follows the rbp chain from `frame`, appending return addresses at frames[*count..max_depth).
// Separate from the sigsetjmp frame so that none of its locals can be clobbered by the jump;
// *count is volatile and always holds the frames completed so far.
void FollowFramePointers(uintptr_t frame, uintptr_t low, RawFrame* frames, int max_depth,
                         volatile int* count, bool* truncated) {
  // A frame is [saved rbp][return address] at rbp. The chain must move up the stack and stay
  // within kMaxFrameBytes of the previous frame; anything else is the end of the chain (the
  // outermost frame has rbp == 0) or a function that does not keep a frame pointer.
  constexpr uintptr_t kMaxFrameBytes = 1 << 20;
  while (frame >= low && frame - low <= kMaxFrameBytes && (frame & 7) == 0) {
    const auto* slots = reinterpret_cast<const volatile uintptr_t*>(frame);
    const uintptr_t next = slots[0];
    const uintptr_t return_address = slots[1];
    if (return_address == 0) break;
    const int index = *count;
    if (index == max_depth) {
      *truncated = true;
      break;
    }
    frames[index] = {static_cast<uint64_t>(return_address), kNativeReturnAddress,
                     FrameKind::kNative};
    *count = index + 1;
    if (next <= frame) break;
    low = frame + 2 * sizeof(uintptr_t);
    frame = next;
  }
}

}  // namespace

int StackWalker::WalkFramePointers(void* ucontext, RawFrame* frames, int max_depth,
                                   bool* truncated) {
  const auto* context = static_cast<const ucontext_t*>(ucontext);
  volatile int count = 0;
  *truncated = false;
  if (max_depth < 1) return 0;
  frames[0] = {static_cast<uint64_t>(context->uc_mcontext.gregs[REG_RIP]), kNativeInterruptedPc,
               FrameKind::kNative};
  count = 1;
  sigjmp_buf jump;
  sigjmp_buf* const outer = FaultGuard::Current();
  if (sigsetjmp(jump, 0) != 0) {
    FaultGuard::Restore(outer);
    *truncated = true;
    return count;
  }
  FaultGuard::Arm(&jump);
  FollowFramePointers(static_cast<uintptr_t>(context->uc_mcontext.gregs[REG_RBP]),
                      static_cast<uintptr_t>(context->uc_mcontext.gregs[REG_RSP]), frames,
                      max_depth, &count, truncated);
  FaultGuard::Restore(outer);
  return count;
}

int StackWalker::WalkDwarf(void* ucontext, RawFrame* frames, int max_depth, bool* truncated) {
  // `count` is read after a siglongjmp, so it must not live only in a register.
  volatile int count = 0;
  *truncated = false;
  unw_cursor_t cursor;
  sigjmp_buf jump;
  sigjmp_buf* const outer = FaultGuard::Current();
  if (sigsetjmp(jump, 0) != 0) {
    FaultGuard::Restore(outer);
    *truncated = true;
    return count;
  }
  FaultGuard::Arm(&jump);
  if (unw_init_local2(&cursor, static_cast<unw_context_t*>(ucontext), UNW_INIT_SIGNAL_FRAME) < 0) {
    FaultGuard::Restore(outer);
    *truncated = true;
    return 0;
  }
  while (true) {
    unw_word_t pc = 0;
    if (unw_get_reg(&cursor, UNW_REG_IP, &pc) < 0 || pc == 0) break;
    if (count == max_depth) {
      *truncated = true;
      break;
    }
    const int index = count;
    frames[index].id = pc;
    frames[index].bci = index == 0 ? kNativeInterruptedPc : kNativeReturnAddress;
    frames[index].kind = FrameKind::kNative;
    count = index + 1;
    const int step = unw_step(&cursor);
    if (step == 0) break;  // the outermost frame
    if (step < 0) {
      *truncated = true;
      break;
    }
  }
  FaultGuard::Restore(outer);
  return count;
}

}  // namespace ctxprof
