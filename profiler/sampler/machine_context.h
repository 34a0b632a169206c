// MachineContext: the one place that knows how the kernel's signal frame (ucontext_t) stores an
// interrupted thread's registers. Every signal-path file reads pc, sp and fp through it, so a port
// to another architecture touches this header and nothing else of the register layout.
//
// Supported: x86-64 (pc = rip, sp = rsp, fp = rbp, syscall result = rax) and AArch64 (pc, sp,
// fp = x29, syscall result = x0). Another architecture fails to compile here.
//
// Thread safety: a view over memory the caller owns (the handler's own ucontext, or a copy on
// its stack); no state of its own. Every member is async-signal-safe: plain loads and stores.
#ifndef CTXPROF_PROFILER_SAMPLER_MACHINE_CONTEXT_H_
#define CTXPROF_PROFILER_SAMPLER_MACHINE_CONTEXT_H_

#include <ucontext.h>

#include <cstdint>
#include <cstring>

namespace ctxprof {

class MachineContext {
 public:
  // `ucontext` is the third argument of an SA_SIGINFO handler (or a copy of it).
  explicit MachineContext(void* ucontext) : context_(static_cast<ucontext_t*>(ucontext)) {}
  explicit MachineContext(const void* ucontext)
      : context_(static_cast<ucontext_t*>(const_cast<void*>(ucontext))) {}

  uintptr_t pc() const;
  uintptr_t sp() const;
  uintptr_t fp() const;
  // The register a system call returns its result in (negative errno on failure).
  intptr_t syscall_result() const;

  // Makes the context describe another frame of the same thread (a caller's pc, sp and fp), for
  // a walker that retries from one frame up. Other registers keep the interrupted values.
  void SetFrame(uintptr_t pc, uintptr_t sp, uintptr_t fp);

  // True when the `kSyscallInstructionSize` bytes at `code` are this architecture's system call
  // instruction (x86-64 `syscall`, AArch64 `svc #0`).
  static bool IsSyscallInstruction(const unsigned char* code);

#if defined(__x86_64__)
  static constexpr int kSyscallInstructionSize = 2;
#elif defined(__aarch64__)
  static constexpr int kSyscallInstructionSize = 4;
#endif

  ucontext_t* ucontext() const { return context_; }

 private:
  ucontext_t* const context_;
};

#if defined(__x86_64__)

inline uintptr_t MachineContext::pc() const {
  return static_cast<uintptr_t>(context_->uc_mcontext.gregs[REG_RIP]);
}
inline uintptr_t MachineContext::sp() const {
  return static_cast<uintptr_t>(context_->uc_mcontext.gregs[REG_RSP]);
}
inline uintptr_t MachineContext::fp() const {
  return static_cast<uintptr_t>(context_->uc_mcontext.gregs[REG_RBP]);
}
inline intptr_t MachineContext::syscall_result() const {
  return static_cast<intptr_t>(context_->uc_mcontext.gregs[REG_RAX]);
}
inline void MachineContext::SetFrame(uintptr_t pc, uintptr_t sp, uintptr_t fp) {
  context_->uc_mcontext.gregs[REG_RIP] = static_cast<greg_t>(pc);
  context_->uc_mcontext.gregs[REG_RSP] = static_cast<greg_t>(sp);
  context_->uc_mcontext.gregs[REG_RBP] = static_cast<greg_t>(fp);
}
inline bool MachineContext::IsSyscallInstruction(const unsigned char* code) {
  return code[0] == 0x0f && code[1] == 0x05;
}

#elif defined(__aarch64__)

inline uintptr_t MachineContext::pc() const {
  return static_cast<uintptr_t>(context_->uc_mcontext.pc);
}
inline uintptr_t MachineContext::sp() const {
  return static_cast<uintptr_t>(context_->uc_mcontext.sp);
}
inline uintptr_t MachineContext::fp() const {
  return static_cast<uintptr_t>(context_->uc_mcontext.regs[29]);
}
inline intptr_t MachineContext::syscall_result() const {
  return static_cast<intptr_t>(context_->uc_mcontext.regs[0]);
}
inline void MachineContext::SetFrame(uintptr_t pc, uintptr_t sp, uintptr_t fp) {
  context_->uc_mcontext.pc = pc;
  context_->uc_mcontext.sp = sp;
  context_->uc_mcontext.regs[29] = fp;
}
inline bool MachineContext::IsSyscallInstruction(const unsigned char* code) {
  uint32_t instruction;
  memcpy(&instruction, code, sizeof(instruction));
  return instruction == 0xd4000001;  // svc #0
}

#else
#error "MachineContext: unsupported architecture (x86-64 and AArch64 only)"
#endif

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SAMPLER_MACHINE_CONTEXT_H_
