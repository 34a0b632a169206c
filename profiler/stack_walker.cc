#include "profiler/stack_walker.h"

#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <setjmp.h>
#include <ucontext.h>

#include <mutex>

#include "profiler/fault_guard.h"

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

int StackWalker::Walk(void* ucontext, RawFrame* frames, int max_depth, bool* truncated) {
  // `count` is read after a siglongjmp, so it must not live only in a register.
  volatile int count = 0;
  *truncated = false;
  unw_cursor_t cursor;
  sigjmp_buf jump;
  if (sigsetjmp(jump, 0) != 0) {
    *truncated = true;
    return count;
  }
  FaultGuard::Arm(&jump);
  if (unw_init_local2(&cursor, static_cast<unw_context_t*>(ucontext), UNW_INIT_SIGNAL_FRAME) < 0) {
    FaultGuard::Disarm();
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
    frames[index].bci = -1;
    frames[index].kind = FrameKind::kNative;
    count = index + 1;
    const int step = unw_step(&cursor);
    if (step == 0) break;  // the outermost frame
    if (step < 0) {
      *truncated = true;
      break;
    }
  }
  FaultGuard::Disarm();
  return count;
}

}  // namespace ctxprof
