// The platform's floor under every sampling profiler here: the CPU a thread loses per sample when
// the kernel delivers a perf_event cpu-clock signal to a handler that does nothing but re-arm the
// event (as PerfEngine's does). It includes the timer interrupt, the signal frame (saving and
// restoring the register state), the re-arm ioctl and, in a VM, the hypervisor's share of each.
// ctxprof's own per-sample cost is what the overhead benchmarks show beyond this.
//
// One thread runs a fixed loop with the event off, at 10 ms and at 1 ms, interleaved round by
// round; it prints the median CPU seconds per configuration and the extra CPU per sample.
//   bazel run -c opt //bench/sampler:signal_floor_bench [-- rounds [loop_seconds]]
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/sampler/interleaved_rounds.h"

namespace {

volatile sig_atomic_t g_signals = 0;
volatile uint64_t g_sink = 0;  // keeps the loop's result alive

void OnSignal(int, siginfo_t* info, void*) {
  const int saved_errno = errno;
  g_signals = g_signals + 1;
  ioctl(info->si_fd, PERF_EVENT_IOC_REFRESH, 1);
  errno = saved_errno;
}

double ThreadCpuSeconds() {
  timespec now;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) / 1e9;
}

__attribute__((noinline)) uint64_t Work(uint64_t iterations) {
  uint64_t value = 1;
  for (uint64_t i = 0; i < iterations; ++i) {
    value = value * 6364136223846793005ull + 1442695040888963407ull;
    asm volatile("" : "+r"(value));
  }
  return value;
}

// Opens a cpu-clock event on this thread that signals SIGPROF every period_ns of its CPU time.
int OpenEvent(uint64_t period_ns) {
  perf_event_attr attr;
  memset(&attr, 0, sizeof(attr));
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_CPU_CLOCK;
  attr.sample_period = period_ns;
  attr.disabled = 1;
  attr.wakeup_events = 1;
  const int fd = static_cast<int>(syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0));
  if (fd < 0) {
    fprintf(stderr, "perf_event_open(cpu-clock): %s (check kernel.perf_event_paranoid)\n",
            strerror(errno));
    exit(1);
  }
  f_owner_ex owner = {F_OWNER_TID, static_cast<pid_t>(syscall(SYS_gettid))};
  if (fcntl(fd, F_SETFL, O_ASYNC) != 0 || fcntl(fd, F_SETSIG, SIGPROF) != 0 ||
      fcntl(fd, F_SETOWN_EX, &owner) != 0 || ioctl(fd, PERF_EVENT_IOC_RESET, 0) != 0 ||
      ioctl(fd, PERF_EVENT_IOC_REFRESH, 1) != 0) {
    fprintf(stderr, "arming the cpu-clock event: %s\n", strerror(errno));
    exit(1);
  }
  return fd;
}

// CPU seconds of one loop; *signals = signals handled meanwhile. period_ns 0: no event.
double RunOnce(uint64_t period_ns, uint64_t iterations, uint64_t* signals) {
  const int fd = period_ns > 0 ? OpenEvent(period_ns) : -1;
  g_signals = 0;
  const double before = ThreadCpuSeconds();
  g_sink = Work(iterations);
  const double cpu = ThreadCpuSeconds() - before;
  *signals = static_cast<uint64_t>(g_signals);
  if (fd >= 0) {
    ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
    close(fd);
  }
  return cpu;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 7;
  const double loop_seconds = argc > 2 ? atof(argv[2]) : 1.0;
  if (rounds < 1 || loop_seconds <= 0) {
    fprintf(stderr, "usage: signal_floor_bench [rounds >= 1 [loop_seconds > 0]]\n");
    return 2;
  }
  struct sigaction action;
  memset(&action, 0, sizeof(action));
  action.sa_sigaction = OnSignal;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  if (sigaction(SIGPROF, &action, nullptr) != 0) {
    fprintf(stderr, "sigaction(SIGPROF): %s\n", strerror(errno));
    return 1;
  }
  // Calibrate the loop to about loop_seconds of CPU.
  uint64_t signals = 0;
  const uint64_t probe = 50 * 1000 * 1000;
  const double probe_cpu = RunOnce(0, probe, &signals);
  const auto iterations =
      static_cast<uint64_t>(static_cast<double>(probe) * loop_seconds / std::max(probe_cpu, 1e-6));

  const std::vector<uint64_t> periods = {0, 10 * 1000 * 1000, 1000 * 1000};
  const std::vector<ctxprof::bench::ConfigurationResults> results =
      ctxprof::bench::RunInterleaved(periods.size(), rounds, [&](size_t index, uint64_t* signals) {
        return RunOnce(periods[index], iterations, signals);
      });
  std::vector<std::string> names;
  for (uint64_t period : periods) {
    names.push_back(period == 0 ? "off" : std::to_string(period / 1000000) + "ms");
  }
  ctxprof::bench::PrintOverheadTable("period", "signals", names, results);
  return 0;
}
