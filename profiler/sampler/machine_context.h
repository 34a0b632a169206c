// MachineContext: the one place that knows how the kernel's signal frame (ucontext_t) stores an
// interrupted thread's registers. Every signal-path file reads pc, sp and fp through it, so a port
// to another architecture touches this header and nothing else of the register layout.
//
// Supported: x86-64 (pc = rip, sp = rsp, fp = rbp, syscall result = rax) and AArch64 (pc, sp,
// fp = x29, syscall result = x0). Another architecture fails to compile here. It also holds what
// the DWARF walker (cfi_table.h) needs to know of the architecture: the DWARF numbers of those
// registers, the signal return trampoline's code and where the kernel's signal frame keeps the
// interrupted context, and where kernel addresses start (kernel frames from perf callchains). The
// DWARF walker is tested on x86-64 only.
//
// Thread safety: a view over memory the caller owns (the handler's own ucontext, or a copy on
// its stack); no state of its own. Every member is async-signal-safe: plain loads and stores.
#ifndef CTXPROF_PROFILER_SAMPLER_MACHINE_CONTEXT_H_
#define CTXPROF_PROFILER_SAMPLER_MACHINE_CONTEXT_H_

#include <signal.h>
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

  // True when the `kSigreturnSize` bytes at `code` are the C library's signal return trampoline
  // (glibc's __restore_rt: the rt_sigreturn system call), which a handler returns into.
  static bool IsSigreturnTrampoline(const unsigned char* code);

  // The interrupted thread's ucontext_t in the kernel's signal frame, given the stack pointer at
  // the signal return trampoline (a handler has just returned into it).
  static uintptr_t SignalFrameContext(uintptr_t trampoline_sp);

#if defined(__x86_64__)
  static constexpr int kSyscallInstructionSize = 2;
  static constexpr int kSigreturnSize = 9;  // mov $15, %rax; syscall
  // DWARF register numbers (System V x86-64 psABI): rsp, rbp and the return address column.
  static constexpr int kDwarfSp = 7;
  static constexpr int kDwarfFp = 6;
  static constexpr int kDwarfReturnAddress = 16;
  // The lowest kernel address (the upper canonical half): kernel callchain entries are above it.
  static constexpr uint64_t kKernelSpaceStart = 0xffff800000000000ull;
#elif defined(__aarch64__)
  static constexpr int kSyscallInstructionSize = 4;
  static constexpr int kSigreturnSize = 8;  // mov x8, #139; svc #0
  static constexpr int kDwarfSp = 31;
  static constexpr int kDwarfFp = 29;
  static constexpr int kDwarfReturnAddress = 30;  // x30 (lr)
  // Kernel addresses have the top bits set (TTBR1); the widest layout (52-bit) starts here.
  static constexpr uint64_t kKernelSpaceStart = 0xfff0000000000000ull;
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
inline bool MachineContext::IsSigreturnTrampoline(const unsigned char* code) {
  static constexpr unsigned char kCode[kSigreturnSize] = {0x48, 0xc7, 0xc0, 0x0f, 0x00,
                                                          0x00, 0x00, 0x0f, 0x05};
  return memcmp(code, kCode, kSigreturnSize) == 0;
}
// The handler's `ret` popped the frame's return address (pretcode): the ucontext comes next.
inline uintptr_t MachineContext::SignalFrameContext(uintptr_t trampoline_sp) {
  return trampoline_sp;
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
inline bool MachineContext::IsSigreturnTrampoline(const unsigned char* code) {
  uint32_t instructions[2];
  memcpy(instructions, code, sizeof(instructions));
  return instructions[0] == 0xd2801168 && instructions[1] == 0xd4000001;  // x8 = 139; svc #0
}
// The kernel's rt_sigframe starts at sp: a siginfo_t, then the ucontext.
inline uintptr_t MachineContext::SignalFrameContext(uintptr_t trampoline_sp) {
  return trampoline_sp + sizeof(siginfo_t);
}

#else
#error "MachineContext: unsupported architecture (x86-64 and AArch64 only)"
#endif

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_SAMPLER_MACHINE_CONTEXT_H_
