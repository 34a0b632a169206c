#include "profiler/sampler/signal_handler.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "profiler/sampler/fault_guard.h"
#include "profiler/sampler/in_flight.h"
#include "profiler/sampler/itimer_engine.h"
#include "profiler/sampler/machine_context.h"
#include "profiler/sampler/perf_callchain.h"
#include "profiler/sampler/perf_engine.h"
#include "profiler/sampler/stack_walker.h"

namespace ctxprof {
namespace {

HandlerSession g_session;
std::atomic<bool> g_enabled{false};
InFlight g_in_flight;
std::atomic<HandlerCostRecorder*> g_cost_recorder{nullptr};
std::atomic<uint64_t> g_samples{0};
std::atomic<uint64_t> g_ignored{0};
pid_t g_pid = 0;  // set at Install, before any signal can reach us
// Which activation g_session is (incremented by Activate before it enables the handler), so
// that weight carried on a thread from an earlier session is not added to this one's samples.
uint32_t g_activation = 0;

// The weight of a thread's samples that found the buffer full, carried to its next recorded
// sample of the same kind (signal_handler.h, "Dropped samples"). Initial-exec TLS, zero at
// thread start; read and written only by this thread's handler, which our signals never
// interrupt (each blocks the others), so plain fields suffice.
struct CarriedWeight {
  uint32_t activation;
  uint32_t cpu;
  uint32_t wall;
};
__attribute__((tls_model("initial-exec"))) __thread CarriedWeight t_carried = {0, 0, 0};

uint32_t SaturatingAdd(uint32_t a, uint32_t b) { return a > UINT32_MAX - b ? UINT32_MAX : a + b; }

// A thread interrupted in a blocking system call is sleeping: either the kernel rewound the pc
// to re-execute the system call instruction (a restartable call), or the pc follows it and the
// call returned -EINTR. *syscall_end gets the address after that instruction (0 when running).
ThreadState StateOf(void* ucontext, uintptr_t* syscall_end) {
  constexpr int kSize = MachineContext::kSyscallInstructionSize;
  const MachineContext context(ucontext);
  *syscall_end = 0;
  unsigned char code[2 * kSize];  // the instruction before the pc, and the one at it
  if (!FaultGuard::SafeRead(reinterpret_cast<const void*>(context.pc() - kSize), code,
                            sizeof(code))) {
    return ThreadState::kUnknown;
  }
  if (MachineContext::IsSyscallInstruction(code + kSize)) {
    *syscall_end = context.pc() + kSize;
    return ThreadState::kSleeping;
  }
  if (MachineContext::IsSyscallInstruction(code) && context.syscall_result() == -EINTR) {
    *syscall_end = context.pc();
    return ThreadState::kSleeping;
  }
  return ThreadState::kRunning;
}

// Fills frames[0..depth) as g_session says; returns the frame count.
int WalkStack(void* ucontext, RawFrame* frames, int depth, bool* truncated) {
  const JavaStackWalk java_walk = g_session.java_walk;
  if (java_walk == nullptr) {
    return StackWalker::Walk(ucontext, frames, depth, truncated, g_session.unwind);
  }
  switch (g_session.mixed) {
    case MixedStack::kJavaOnly:
      return java_walk(ucontext, frames, depth);
    case MixedStack::kJavaElseNative: {
      const int java = java_walk(ucontext, frames, depth);
      if (java > 0) return java;
      return StackWalker::Walk(ucontext, frames, depth, truncated, g_session.unwind);
    }
    case MixedStack::kMixed: {
      const JavaCodeProbe java_code = g_session.java_code;
      // Interrupted in the VM's code (a busy Java thread, most samples): no native frame comes
      // before the Java ones, and the native walk would stop at its first frame anyway.
      if (java_code != nullptr && java_code(MachineContext(ucontext).pc())) {
        return java_walk(ucontext, frames, depth);
      }
      int native = StackWalker::Walk(ucontext, frames, depth, truncated, g_session.unwind);
      for (int i = 0; java_code != nullptr && i < native; i++) {
        if (java_code(frames[i].id)) {
          // The Java frames take over here; the walk's frames beyond are not native frames.
          native = i;
          *truncated = false;
          break;
        }
      }
      return native + java_walk(ucontext, frames + native, depth - native);
    }
  }
  return 0;
}

// `ring`: the event's unread ring records for a perf signal, else null.
void TakeSample(const siginfo_t* info, void* ucontext, uint64_t entry_ticks,
                const PerfCallchain::Unread* ring) {
  SampleKind kind = SampleKind::kCpu;
  Engine engine = Engine::kPerfCpuClock;
  uint32_t weight = 1;
  uint32_t witness_slot = WallWitnessTable::kNoSlot;  // wall: the slot its witness goes to
  switch (info->si_code) {
    case POLL_IN:   // a continuous event (perf_engine.h)
    case POLL_HUP:  // a one-shot event
      // The overflows since the last signal's read, when the event has a ring: more than one
      // when signals were blocked or coalesced, none when an earlier signal's read already
      // counted this one's. Without a ring, a one-shot event's one overflow.
      if (ring->has_ring()) {
        weight = ring->overflows();
        if (weight == 0) return;
      } else if (info->si_code == POLL_IN) {
        return;  // a continuous event whose ring is being unmapped (Stop)
      }
      break;
    case SI_TIMER:
      engine = Engine::kCpuTimer;
      weight += static_cast<uint32_t>(info->si_overrun > 0 ? info->si_overrun : 0);
      break;
    case SI_KERNEL:
      engine = Engine::kITimer;
      weight = ITimerEngine::SampleWeight();
      break;
    case SI_QUEUE:
      // The wall sampler's signal carries the intervals the sample stands for and its witness
      // slot (wall_engine.h, wall_witness.h).
      if (info->si_pid != g_pid) {
        g_ignored.fetch_add(1, std::memory_order_relaxed);
        return;
      }
      kind = SampleKind::kWall;
      engine = Engine::kWall;
      WallWitnessTable::Decode(info->si_value, &weight, &witness_slot);
      if (weight == 0) weight = 1;
      if (g_session.wall_witnesses == nullptr) witness_slot = WallWitnessTable::kNoSlot;
      break;
    default:
      g_ignored.fetch_add(1, std::memory_order_relaxed);
      return;
  }
  // From initial-exec TLS (context_map.h; renewed in a fork child): a gettid system call was
  // most of the handler's cost besides the walk (docs/SAMPLER.md, "Measurements").
  const pid_t tid = CachedTid();
  SampleBuffer* buffer = g_session.buffer;
  CarriedWeight& carried = t_carried;
  if (carried.activation != g_activation) carried = CarriedWeight{g_activation, 0, 0};
  uint32_t& carried_here = kind == SampleKind::kWall ? carried.wall : carried.cpu;
  SampleRecord* record = buffer->TryClaim();
  ContextBlock* block = g_session.context_map->BlockFor(tid);
  if (record == nullptr) {
    carried_here = SaturatingAdd(carried_here, weight);
    buffer->CountDrop();
    if (witness_slot != WallWitnessTable::kNoSlot) {
      g_session.wall_witnesses->WitnessFromHandler(witness_slot, tid, 0, 0, ucontext, block);
    }
    return;
  }
  record->ticks = entry_ticks;
  record->tid = tid;
  record->kind = kind;
  record->engine = engine;
  record->weight = SaturatingAdd(weight, carried_here);
  carried_here = 0;
  record->virtual_thread_id = g_session.virtual_thread != nullptr ? g_session.virtual_thread() : 0;
  record->flags = 0;
  uintptr_t syscall_end = 0;
  record->state =
      kind == SampleKind::kWall ? StateOf(ucontext, &syscall_end) : ThreadState::kRunning;
  if (block != nullptr) {
    const ReadStatus status = ReadBlock(*block, &record->context, kSameThreadReadAttempts);
    if (status == ReadStatus::kBusy) record->flags |= kSampleContextBusy;
    if (status == ReadStatus::kTorn) record->flags |= kSampleContextTorn;
  } else {
    memset(&record->context, 0, sizeof(record->context));
  }
  bool truncated = false;
  int kernel = 0;
  if (engine == Engine::kPerfCpuClock) {
    // At most half the depth: a deep kernel chain leaves room for the user stack.
    kernel = ring->KernelFrames(record->frames, g_session.depth / 2, &truncated);
  }
  record->frame_count = static_cast<uint32_t>(
      kernel + WalkStack(ucontext, record->frames + kernel, g_session.depth - kernel, &truncated));
  if (truncated) record->flags |= kSampleTruncated;
  HandlerCostRecorder* recorder = g_cost_recorder.load(std::memory_order_acquire);
  if (recorder != nullptr) {
    const uint64_t index = recorder->next.fetch_add(1, std::memory_order_relaxed);
    recorder->ticks[index % recorder->capacity] = g_session.clock->Now() - entry_ticks;
  }
  const bool context_read = (record->flags & (kSampleContextBusy | kSampleContextTorn)) == 0;
  buffer->Publish(record);
  g_samples.fetch_add(1, std::memory_order_relaxed);
  if (witness_slot != WallWitnessTable::kNoSlot) {
    // After the publish: the sampler repeats this sample only once it sees the witness.
    g_session.wall_witnesses->WitnessFromHandler(witness_slot, tid, entry_ticks,
                                                 context_read ? syscall_end : 0, ucontext, block);
  }
}

void OnSignal(int, siginfo_t* info, void* ucontext) {
  const int saved_errno = errno;
  std::atomic<int32_t>* const in_flight = g_in_flight.Enter(CachedTid());
  const bool enabled = g_enabled.load(std::memory_order_seq_cst);
  const uint64_t entry_ticks = enabled ? g_session.clock->Now() : 0;
  if (info->si_code == POLL_IN || info->si_code == POLL_HUP) {
    // The ring is consumed when `ring` goes out of scope, whether or not a sample was taken (a
    // dropped sample, a disabled handler), so the next signal reads only its own records.
    const PerfCallchain::Unread ring(info->si_fd, CachedTid());
    if (enabled) TakeSample(info, ucontext, entry_ticks, &ring);
    // A one-shot event is re-armed, even when disabled or dropped: it belongs to the running
    // session until Stop closes it, and Rearm ignores fds that are no longer ours. A continuous
    // event that overflowed again before this signal was handled (the handler, or a blocked
    // signal, took longer than the interval) becomes one-shot for one overflow, so that sampling
    // can never starve the thread, and continuous again at that overflow's signal
    // (perf_engine.h, "Arming").
    if (info->si_code == POLL_HUP && ring.has_ring()) {
      PerfEngine::Resume(info->si_fd);
    } else if (info->si_code == POLL_HUP || ring.overflows() > 1) {
      PerfEngine::Rearm(info->si_fd);
    }
  } else if (enabled) {
    TakeSample(info, ucontext, entry_ticks, nullptr);
  }
  InFlight::Leave(in_flight);
  errno = saved_errno;
}

}  // namespace

Status SignalHandler::Install(int signal) {
  static std::mutex install_mutex;
  static sigset_t installed;  // every signal whose handler is OnSignal; guarded by install_mutex
  static bool installed_initialized = false;
  std::lock_guard<std::mutex> lock(install_mutex);
  if (!installed_initialized) {
    sigemptyset(&installed);
    installed_initialized = true;
  }
  g_pid = getpid();
  struct sigaction current;
  if (sigaction(signal, nullptr, &current) != 0) {
    const int err = errno;
    return Status::Unavailable(
        "signal " + std::to_string(signal) + ": sigaction failed: " + strerror(err), err);
  }
  const bool ours = (current.sa_flags & SA_SIGINFO) && current.sa_sigaction == OnSignal;
  if (ours) return Status();
  const bool foreign = (current.sa_flags & SA_SIGINFO) ||
                       (current.sa_handler != SIG_DFL && current.sa_handler != SIG_IGN);
  if (foreign) {
    // The name users write in signal= (SIGPROF), not only its number or strsignal's prose.
    const char* abbreviation = sigabbrev_np(signal);  // null for real-time signals
    const std::string name =
        abbreviation != nullptr
            ? "SIG" + std::string(abbreviation) + " (signal " + std::to_string(signal) + ")"
            : "signal " + std::to_string(signal);
    return Status::Unavailable(name +
                                   " already has a handler installed by the host; choose a free "
                                   "signal with signal= or wallsignal=, e.g. signal=SIGRTMIN+2",
                               0);
  }
  sigset_t blocked = installed;
  sigaddset(&blocked, signal);
  struct sigaction action;
  memset(&action, 0, sizeof(action));
  action.sa_sigaction = OnSignal;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  action.sa_mask = blocked;
  // The new signal first, then the earlier ones again with the wider mask.
  if (sigaction(signal, &action, nullptr) != 0) {
    const int err = errno;
    return Status::Unavailable(
        "signal " + std::to_string(signal) + ": sigaction failed: " + strerror(err), err);
  }
  installed = blocked;
  for (int other = 1; other < NSIG; other++) {
    if (other != signal && sigismember(&installed, other) == 1 &&
        sigaction(other, &action, nullptr) != 0) {
      const int err = errno;
      return Status::Unavailable(
          "signal " + std::to_string(other) + ": sigaction failed: " + strerror(err), err);
    }
  }
  return Status();
}

void SignalHandler::Activate(const HandlerSession& session) {
  g_session = session;
  ++g_activation;  // published to handlers by the store of g_enabled below
  g_enabled.store(true, std::memory_order_seq_cst);
}

void SignalHandler::Deactivate() {
  g_enabled.store(false, std::memory_order_seq_cst);
  g_in_flight.Drain();
}

void SignalHandler::SetCostRecorder(HandlerCostRecorder* recorder) {
  g_cost_recorder.store(recorder, std::memory_order_release);
}

uint64_t SignalHandler::samples() { return g_samples.load(std::memory_order_relaxed); }
uint64_t SignalHandler::ignored_signals() { return g_ignored.load(std::memory_order_relaxed); }

}  // namespace ctxprof
