#include "profiler/sampler/fault_guard.h"

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
    // The region's owner restores the outer region after the jump.
    t_fault_jump = nullptr;
    g_recovered_faults.fetch_add(1, std::memory_order_relaxed);
    siglongjmp(*jump, 1);
  }
  ForwardToPrevious(signo, info, ucontext);
}

}  // namespace

bool FaultGuard::Install(std::string* error) {
  static std::mutex install_mutex;
  static bool installed = false;
  std::lock_guard<std::mutex> lock(install_mutex);
  if (installed) return true;
  struct sigaction action;
  memset(&action, 0, sizeof(action));
  action.sa_sigaction = OnFault;
  action.sa_flags = SA_SIGINFO | SA_NODEFER | SA_RESTART;
  sigemptyset(&action.sa_mask);
  if (sigaction(SIGSEGV, &action, &g_previous_segv) != 0 ||
      sigaction(SIGBUS, &action, &g_previous_bus) != 0) {
    *error = std::string("cannot install the SIGSEGV/SIGBUS guard: ") + strerror(errno);
    return false;
  }
  installed = true;
  return true;
}

sigjmp_buf* FaultGuard::Current() { return t_fault_jump; }

void FaultGuard::Arm(sigjmp_buf* jump) {
  t_fault_jump = jump;
  // Keep the compiler from moving guarded reads above the arming store.
  std::atomic_signal_fence(std::memory_order_seq_cst);
}

void FaultGuard::Restore(sigjmp_buf* outer) {
  std::atomic_signal_fence(std::memory_order_seq_cst);
  t_fault_jump = outer;
}

uint64_t FaultGuard::recovered_faults() {
  return g_recovered_faults.load(std::memory_order_relaxed);
}

bool FaultGuard::SafeRead(const void* address, void* out, size_t size) {
  sigjmp_buf jump;
  sigjmp_buf* const outer = Current();
  if (sigsetjmp(jump, 0) != 0) {
    Restore(outer);
    return false;
  }
  Arm(&jump);
  const volatile unsigned char* source = static_cast<const volatile unsigned char*>(address);
  unsigned char* target = static_cast<unsigned char*>(out);
  for (size_t i = 0; i < size; ++i) target[i] = source[i];
  Restore(outer);
  return true;
}

}  // namespace ctxprof
