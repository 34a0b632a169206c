// The platform's floor under every sampling profiler here: the CPU a thread loses per sample when
// the kernel delivers a perf_event cpu-clock signal to a handler that does nothing else. As
// PerfEngine's continuous events (perf_engine.h), the event has a ring buffer and signals every
// overflow by itself; the handler only empties the ring. That leaves the timer interrupt, the
// signal frame (saving and restoring the register state), the signal's return and, in a VM, the
// hypervisor's share of each. ctxprof's own per-sample cost is what the overhead benchmarks show
// beyond this. The "1ms-oneshot" row is the same at 1 ms with a one-shot event that the handler
// re-arms with PERF_EVENT_IOC_REFRESH after every signal (ctxprof's events without a ring, and
// async-profiler's, which also resets the count first): the difference is the re-arm ioctl.
//
// One thread runs a fixed loop with the event off, at 10 ms, at 1 ms and at 1 ms one-shot,
// interleaved round by round; it prints the median CPU seconds per configuration and the extra CPU
// per sample.
//   bazel run -c opt //bench/sampler:signal_floor_bench [-- rounds [loop_seconds]]
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
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
bool g_one_shot = false;       // set between runs, before the event exists
perf_event_mmap_page* g_ring = nullptr;
constexpr size_t kRingBytes = 2 * 4096;  // metadata page + one data page, as perf_callchain.h

void OnSignal(int, siginfo_t* info, void*) {
  const int saved_errno = errno;
  g_signals = g_signals + 1;
  const uint64_t head = __atomic_load_n(&g_ring->data_head, __ATOMIC_ACQUIRE);
  __atomic_store_n(&g_ring->data_tail, head, __ATOMIC_RELEASE);
  if (g_one_shot) ioctl(info->si_fd, PERF_EVENT_IOC_REFRESH, 1);
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
  attr.sample_type = PERF_SAMPLE_CALLCHAIN;  // kernel part only, as with kernel frames on
  attr.exclude_callchain_user = 1;
  const int fd = static_cast<int>(syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0));
  if (fd < 0) {
    fprintf(stderr, "perf_event_open(cpu-clock): %s (check kernel.perf_event_paranoid)\n",
            strerror(errno));
    exit(1);
  }
  f_owner_ex owner = {F_OWNER_TID, static_cast<pid_t>(syscall(SYS_gettid))};
  if (fcntl(fd, F_SETFL, O_ASYNC) != 0 || fcntl(fd, F_SETSIG, SIGPROF) != 0 ||
      fcntl(fd, F_SETOWN_EX, &owner) != 0) {
    fprintf(stderr, "routing the cpu-clock event's signal: %s\n", strerror(errno));
    exit(1);
  }
  void* ring = mmap(nullptr, kRingBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (ring == MAP_FAILED) {
    fprintf(stderr, "mapping the event's ring buffer: %s (check RLIMIT_MEMLOCK)\n",
            strerror(errno));
    exit(1);
  }
  g_ring = static_cast<perf_event_mmap_page*>(ring);
  if (ioctl(fd, PERF_EVENT_IOC_RESET, 0) != 0 ||
      ioctl(fd, g_one_shot ? PERF_EVENT_IOC_REFRESH : PERF_EVENT_IOC_ENABLE, 1) != 0) {
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
    munmap(g_ring, kRingBytes);
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

  struct Configuration {
    const char* name;
    uint64_t period_ns;  // 0: no event
    bool one_shot;
  };
  const std::vector<Configuration> configurations = {{"off", 0, false},
                                                     {"10ms", 10 * 1000 * 1000, false},
                                                     {"1ms", 1000 * 1000, false},
                                                     {"1ms-oneshot", 1000 * 1000, true}};
  const std::vector<ctxprof::bench::ConfigurationResults> results = ctxprof::bench::RunInterleaved(
      configurations.size(), rounds, [&](size_t index, uint64_t* signals) {
        g_one_shot = configurations[index].one_shot;
        return RunOnce(configurations[index].period_ns, iterations, signals);
      });
  std::vector<std::string> names;
  for (const Configuration& configuration : configurations) names.push_back(configuration.name);
  ctxprof::bench::PrintOverheadTable("period", "signals", names, results);
  return 0;
}
