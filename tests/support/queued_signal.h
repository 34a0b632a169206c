// Profiling signals queued by a test to its own thread, as the engines send them: a signal sent
// to the calling thread (and not blocked) is handled before the sending system call returns, so
// a test sees the handler's effect at once, with no timers.
#ifndef CTXPROF_TESTS_SUPPORT_QUEUED_SIGNAL_H_
#define CTXPROF_TESTS_SUPPORT_QUEUED_SIGNAL_H_

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

#include "profiler/sampler/wall_witness.h"

namespace ctxprof::testing {

// A wall sampler's signal (SI_QUEUE from our own pid, the weight and no witness slot in si_value;
// wall_engine.h).
inline siginfo_t WallSignal(int signal, int weight) {
  siginfo_t info;
  memset(&info, 0, sizeof(info));
  info.si_signo = signal;
  info.si_code = SI_QUEUE;
  info.si_pid = getpid();
  info.si_uid = getuid();
  info.si_value =
      WallWitnessTable::Encode(static_cast<uint32_t>(weight), WallWitnessTable::kNoSlot);
  return info;
}

// Queues `info` to the calling thread; 0, or -1 with errno.
inline long QueueToThisThread(siginfo_t info) {
  return syscall(SYS_rt_tgsigqueueinfo, getpid(), static_cast<pid_t>(syscall(SYS_gettid)),
                 info.si_signo, &info);
}

}  // namespace ctxprof::testing

#endif  // CTXPROF_TESTS_SUPPORT_QUEUED_SIGNAL_H_
