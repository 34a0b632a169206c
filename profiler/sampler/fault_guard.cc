#include "profiler/sampler/fault_guard.h"

#include <setjmp.h>
#include <signal.h>

#include <atomic>
#include <cstring>
#include <mutex>

namespace ctxprof {
namespace {

__attribute__((tls_model("initial-exec"))) __thread sigjmp_buf* t_fault_jump = nullptr;

std::atomic<uint64_t> g_recovered_faults{0};
struct sigaction g_previous_segv;
struct sigaction g_previous_bus;

void ForwardToPrevious(int signo, siginfo_t* info, void* ucontext) {
  const struct sigaction& previous = signo == SIGSEGV ? g_previous_segv : g_previous_bus;
  if (previous.sa_flags & SA_SIGINFO) {
    previous.sa_sigaction(signo, info, ucontext);
    return;
  }
  if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    previous.sa_handler(signo);
    return;
  }
  // Default (or ignored, which the kernel cannot honour for a real fault): let the re-executed
  // instruction fault again with the default action.
  struct sigaction default_action;
  memset(&default_action, 0, sizeof(default_action));
  default_action.sa_handler = SIG_DFL;
  sigaction(signo, &default_action, nullptr);
}

void OnFault(int signo, siginfo_t* info, void* ucontext) {
  sigjmp_buf* jump = t_fault_jump;
  if (jump != nullptr) {
    // FaultGuard::Run re-arms the outer region after the jump.
    t_fault_jump = nullptr;
    g_recovered_faults.fetch_add(1, std::memory_order_relaxed);
    siglongjmp(*jump, 1);
  }
  ForwardToPrevious(signo, info, ucontext);
}

}  // namespace

Status FaultGuard::Install() {
  static std::mutex install_mutex;
  static bool installed = false;
  std::lock_guard<std::mutex> lock(install_mutex);
  if (installed) return Status();
  struct sigaction action;
  memset(&action, 0, sizeof(action));
  action.sa_sigaction = OnFault;
  action.sa_flags = SA_SIGINFO | SA_NODEFER | SA_RESTART;
  sigemptyset(&action.sa_mask);
  if (sigaction(SIGSEGV, &action, &g_previous_segv) != 0 ||
      sigaction(SIGBUS, &action, &g_previous_bus) != 0) {
    const int err = errno;
    return Status::Unavailable(
        std::string("cannot install the SIGSEGV/SIGBUS guard: sigaction failed: ") + strerror(err),
        err);
  }
  installed = true;
  return Status();
}

// Never inlined: the jump point must belong to a frame of its own that stays alive while body
// runs, and no local of the caller may be live in a register across the jump.
__attribute__((noinline)) bool FaultGuard::Run(void (*body)(void*), void* state) {
  sigjmp_buf jump;
  sigjmp_buf* const outer = t_fault_jump;
  if (sigsetjmp(jump, 0) != 0) {
    // OnFault disarmed the region before jumping; re-arm the one we interrupted.
    std::atomic_signal_fence(std::memory_order_seq_cst);
    t_fault_jump = outer;
    return false;
  }
  t_fault_jump = &jump;
  // Keep the compiler from moving guarded reads above the arming store or below the disarming.
  std::atomic_signal_fence(std::memory_order_seq_cst);
  body(state);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  t_fault_jump = outer;
  return true;
}

namespace {

struct ReadRequest {
  const volatile unsigned char* source;
  unsigned char* target;
  size_t size;
};

CTXPROF_READS_FOREIGN_MEMORY void CopyBytes(void* state) {
  const ReadRequest& request = *static_cast<const ReadRequest*>(state);
  for (size_t i = 0; i < request.size; ++i) request.target[i] = request.source[i];
}

}  // namespace

bool FaultGuard::SafeRead(const void* address, void* out, size_t size) {
  ReadRequest request{static_cast<const volatile unsigned char*>(address),
                      static_cast<unsigned char*>(out), size};
  return Run(&CopyBytes, &request);
}

uintptr_t FaultGuard::ThreadStateAddress() { return reinterpret_cast<uintptr_t>(&t_fault_jump); }

uint64_t FaultGuard::recovered_faults() {
  return g_recovered_faults.load(std::memory_order_relaxed);
}

}  // namespace ctxprof
