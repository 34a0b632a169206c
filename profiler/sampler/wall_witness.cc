#include "profiler/sampler/wall_witness.h"

#include <fcntl.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "profiler/sampler/engine.h"
#include "profiler/sampler/fault_guard.h"
#include "profiler/sampler/machine_context.h"

namespace ctxprof {
namespace {

constexpr uintptr_t kPageSize = 4096;

// The stack hash: word i goes into lane i % 4, so four multiply chains run side by side (16 KiB
// in ~1 us). The handler (over live memory, page by page) and the sampler (over a copy) must
// agree on it word for word. Only each word's low 32 bits count (wall_witness.h): a 32-bit value
// stored in a 64-bit slot leaves the slot's upper half to whatever was there, which differs after
// a signal made a timed wait start again from the same frames (seen in glibc's wait loop: most of
// a JVM's periodic threads were signalled anew after every signal).
struct StackHash {
  uint64_t lanes[4] = {0x243f6a8885a308d3ull, 0x13198a2e03707344ull, 0xa4093822299f31d0ull,
                       0x082efa98ec4e6c89ull};

  __attribute__((always_inline)) void Add(size_t index, uint64_t word) {
    uint64_t& lane = lanes[index & 3];
    lane = (lane ^ static_cast<uint32_t>(word)) * 0x9e3779b97f4a7c15ull;
    lane ^= lane >> 29;
  }
  uint64_t Value() const { return lanes[0] ^ (lanes[1] * 3) ^ (lanes[2] * 5) ^ (lanes[3] * 7); }
};

// What the handler's guarded hash has done so far: bytes [from, done) are in `hash`.
struct StackRead {
  uintptr_t from;
  uintptr_t limit;
  uintptr_t done;
  StackHash hash;
};

// Hashes page by page, so that a fault (the end of the stack's mapping) keeps the whole pages
// read before it.
CTXPROF_READS_FOREIGN_MEMORY void HashStackBody(void* state) {
  StackRead* read = static_cast<StackRead*>(state);
  StackHash hash = read->hash;
  uintptr_t address = read->done;
  while (address < read->limit) {
    const uintptr_t page_end = (address & ~(kPageSize - 1)) + kPageSize;
    const uintptr_t end = page_end < read->limit ? page_end : read->limit;
    for (; address < end; address += sizeof(uint64_t)) {
      hash.Add((address - read->from) / sizeof(uint64_t),
               *reinterpret_cast<const volatile uint64_t*>(address));
    }
    read->hash = hash;
    read->done = address;
  }
}

uint64_t HashCopy(const uint64_t* words, size_t count) {
  StackHash hash;
  for (size_t i = 0; i < count; i++) hash.Add(i, words[i]);
  return hash.Value();
}

int OpenSyscallFile(pid_t tid) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", static_cast<int>(tid));
  return open(path, O_RDONLY | O_CLOEXEC);
}

// Parses /proc/self/task/TID/syscall (read from `fd` at offset 0: the file is generated afresh at
// each read): true when the thread is blocked in a system call, with the user sp and pc it
// entered it from (the pc follows the system call instruction). False when it is not, or the
// thread exited (ESRCH).
bool BlockedInSyscallAt(int fd, uint64_t* sp, uint64_t* pc) {
  char text[256];
  const ssize_t length = pread(fd, text, sizeof(text) - 1, 0);
  if (length <= 0) return false;
  text[length] = '\0';
  // "running", or "-1 SP PC" (blocked, not in a system call), or "NR ARG1..ARG6 SP PC".
  char* cursor = text;
  const long number = strtol(cursor, &cursor, 10);
  if (cursor == text || number < 0) return false;
  uint64_t fields[8];
  int count = 0;
  while (count < 8) {
    char* next;
    const uint64_t value = strtoull(cursor, &next, 16);
    if (next == cursor) break;
    fields[count++] = value;
    cursor = next;
  }
  if (count != 8) return false;
  *sp = fields[6];
  *pc = fields[7];
  return true;
}

// The end address of the mapping named "[stack]" in /proc/self/maps, 0 when there is none.
uintptr_t InitialStackEnd() {
  FILE* maps = fopen("/proc/self/maps", "re");
  if (maps == nullptr) return 0;
  uintptr_t end = 0;
  char line[512];
  while (fgets(line, sizeof(line), maps) != nullptr) {
    if (strstr(line, "[stack]") == nullptr) continue;
    uintptr_t start;
    if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR, &start, &end) != 2) end = 0;
    break;
  }
  fclose(maps);
  return end;
}

}  // namespace

WallWitnessTable::WallWitnessTable()
    : slots_(new WallWitness[kCapacity]),
      syscall_fds_(new int[kCapacity]),
      scratch_(new uint64_t[kStackBytes / sizeof(uint64_t)]),
      initial_stack_end_(InitialStackEnd()) {
  free_.reserve(kCapacity);
  for (uint32_t slot = kCapacity; slot > 0; --slot) {
    free_.push_back(slot - 1);
    syscall_fds_[slot - 1] = -1;
  }
}

WallWitnessTable::~WallWitnessTable() {
  for (uint32_t slot = 0; slot < kCapacity; ++slot) {
    if (syscall_fds_[slot] >= 0) close(syscall_fds_[slot]);
  }
}

void WallWitnessTable::Release(uint32_t slot) {
  if (syscall_fds_[slot] >= 0) {
    close(syscall_fds_[slot]);
    syscall_fds_[slot] = -1;
    --open_syscall_fds_;
  }
  free_.push_back(slot);
}

bool WallWitnessTable::BlockedAt(uint32_t slot, pid_t tid, uint64_t* sp, uint64_t* pc) {
  int& kept = syscall_fds_[slot];
  if (kept < 0 && open_syscall_fds_ < kMaxSyscallFds) {
    kept = OpenSyscallFile(tid);
    if (kept < 0) return false;  // exited
    ++open_syscall_fds_;
  }
  if (kept >= 0) return BlockedInSyscallAt(kept, sp, pc);
  const int fd = OpenSyscallFile(tid);
  if (fd < 0) return false;
  const bool blocked = BlockedInSyscallAt(fd, sp, pc);
  close(fd);
  return blocked;
}

bool ThreadCpuNanos(pid_t tid, uint64_t* nanos) {
  timespec now;
  if (clock_gettime(ThreadCpuClock(tid), &now) != 0) return false;
  *nanos = static_cast<uint64_t>(now.tv_sec) * 1000000000u + static_cast<uint64_t>(now.tv_nsec);
  return true;
}

uint32_t WallWitnessTable::Acquire(pid_t tid) {
  if (free_.empty()) return kNoSlot;
  const uint32_t slot = free_.back();
  free_.pop_back();
  // A handler of the slot's previous thread may still read `tid` (and then leaves the slot alone).
  slots_[slot].tid.store(tid, std::memory_order_relaxed);
  slots_[slot].state.store(WallWitness::kNone, std::memory_order_relaxed);
  return slot;
}

sigval WallWitnessTable::Encode(uint32_t weight, uint32_t slot) {
  sigval value;
  value.sival_ptr = reinterpret_cast<void*>((static_cast<uintptr_t>(slot) << 32) | weight);
  return value;
}

void WallWitnessTable::Decode(const sigval& value, uint32_t* weight, uint32_t* slot) {
  const uintptr_t bits = reinterpret_cast<uintptr_t>(value.sival_ptr);
  *weight = static_cast<uint32_t>(bits);
  *slot = static_cast<uint32_t>(bits >> 32);
}

void WallWitnessTable::WitnessFromHandler(uint32_t slot, pid_t tid, uint64_t published_ticks,
                                          uintptr_t syscall_end_pc, void* ucontext,
                                          const ContextBlock* block) {
  if (slot >= kCapacity) return;
  WallWitness& witness = slots_[slot];
  if (witness.tid.load(std::memory_order_relaxed) != tid ||
      witness.state.load(std::memory_order_acquire) != WallWitness::kPending) {
    return;  // the slot serves another thread now, or this signal is not the one it waits for
  }
  uint64_t sequence = ~0ull;
  if (block != nullptr) sequence = block->sequence.load(std::memory_order_acquire);
  if (published_ticks == 0 || syscall_end_pc == 0 || (sequence & 1) != 0) {
    witness.state.store(WallWitness::kRan, std::memory_order_release);
    return;
  }
  const MachineContext context(ucontext);
  const uintptr_t sp = context.sp();
  // The stack ends below the thread's static TLS (glibc threads), where the handler itself writes
  // while it runs (the fault guard's state, errno): the sampler would never see those values.
  uintptr_t limit = sp + kStackBytes;
  for (const uintptr_t tls :
       {FaultGuard::ThreadStateAddress(), reinterpret_cast<uintptr_t>(__errno_location())}) {
    if (tls > sp && tls < limit) limit = tls & ~static_cast<uintptr_t>(sizeof(uint64_t) - 1);
  }
  if (sp < initial_stack_end_ && limit > initial_stack_end_) limit = initial_stack_end_;
  StackRead stack{sp, limit, sp, StackHash()};
  FaultGuard::Run(&HashStackBody, &stack);
  uint64_t cpu_nanos;
  if (stack.done == stack.from || !ThreadCpuNanos(tid, &cpu_nanos)) {
    witness.state.store(WallWitness::kRan, std::memory_order_release);
    return;
  }
  witness.stack_bytes = static_cast<uint32_t>(stack.done - stack.from);
  witness.sp = stack.from;
  witness.pc = syscall_end_pc;
  witness.stack_hash = stack.hash.Value();
  witness.cpu_nanos = cpu_nanos;
  witness.context_sequence = sequence;
  witness.sample_ticks = published_ticks;
  witness.state.store(WallWitness::kSleeping, std::memory_order_release);
}

bool WallWitnessTable::StillThere(const WallWitness& witness, const ContextBlock* block,
                                  const Clock& clock, WallCheck* check) {
  check->cpu_nanos = 0;
  if (witness.state.load(std::memory_order_acquire) != WallWitness::kSleeping) return false;
  const pid_t tid = witness.tid.load(std::memory_order_relaxed);
  // Before the CPU clock: an unmoved CPU clock proves the thread did not run up to its read.
  const uint64_t before_ticks = clock.Now();
  uint64_t cpu_nanos;
  if (!ThreadCpuNanos(tid, &cpu_nanos)) return false;  // exited
  check->cpu_nanos = cpu_nanos;
  if (cpu_nanos == check->cpu_checked) {  // executed nothing since that check
    check->there_ticks = before_ticks;
    return true;
  }
  if (cpu_nanos < witness.cpu_nanos || cpu_nanos - witness.cpu_nanos >= kRunNanos) return false;
  const uint64_t sequence =
      block != nullptr ? block->sequence.load(std::memory_order_acquire) : ~0ull;
  if (sequence != witness.context_sequence) return false;
  uint64_t sp;
  uint64_t pc;
  if (!BlockedAt(static_cast<uint32_t>(&witness - slots_.get()), tid, &sp, &pc) ||
      sp != witness.sp || pc != witness.pc) {
    return false;
  }
  uint64_t* copy = scratch_.get();
  const iovec local{copy, witness.stack_bytes};
  const iovec remote{reinterpret_cast<void*>(witness.sp), witness.stack_bytes};
  if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) !=
      static_cast<ssize_t>(witness.stack_bytes)) {
    return false;
  }
  if (HashCopy(copy, witness.stack_bytes / sizeof(uint64_t)) != witness.stack_hash) return false;
  // It was there when the reads above saw it; unless it ran during them (it could have left and
  // come back), also at this time.
  const uint64_t after_ticks = clock.Now();
  uint64_t cpu_after;
  if (!ThreadCpuNanos(tid, &cpu_after) || cpu_after != cpu_nanos) return false;
  check->cpu_checked = cpu_nanos;
  check->there_ticks = after_ticks;
  return true;
}

}  // namespace ctxprof
