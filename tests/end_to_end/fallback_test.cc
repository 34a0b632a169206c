// Engine fallback: with perf_event_open refused by a seccomp filter (as in many containers),
// event=cpu falls back to ctimer, says so once in the start message, and the samples record the
// engine that really ran. With timer_create refused too, it falls back to itimer.
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "profiler/ctxprof.h"
#include "profiler/profiler.h"
#include "tests/support/session_test_util.h"

namespace ctxprof {
namespace {

std::atomic<uint64_t> g_sink{0};

// Makes `syscall_number` fail with EACCES in every thread of this process from now on.
void RefuseSyscall(int syscall_number) {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(syscall_number), 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EACCES),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog program = {static_cast<unsigned short>(sizeof(filter) / sizeof(filter[0])), filter};
  ASSERT_EQ(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
  ASSERT_EQ(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &program), 0)
      << strerror(errno);
}

void BurnAndCount(const char* expected_engine, Engine engine) {
  const uint64_t end = testing::ThreadCpuNanos() + 300 * 1000 * 1000;
  uint64_t value = 1;
  while (testing::ThreadCpuNanos() < end) value = testing::Spin(100000, value);
  g_sink += value;
  ASSERT_EQ(ctxprof_stop(), 0);
  EXPECT_EQ(Profiler::Global()->Stats().cpu_engine, expected_engine);
  const AggregatorCounters counters = Profiler::Global()->Counters();
  EXPECT_GT(counters.by_engine[static_cast<int>(engine)], 0u);
  EXPECT_EQ(counters.by_engine[static_cast<int>(Engine::kPerfCpuClock)], 0u);
}

// One test: seccomp filters cannot be removed, so the steps share one process in order.
TEST(FallbackTest, RefusedEnginesFallBackAndSaySo) {
  RefuseSyscall(SYS_perf_event_open);
  char message[512];
  ASSERT_EQ(ctxprof_start("event=cpu,interval=10ms", message, sizeof(message)), 0) << message;
  printf("start message: %s\n", message);
  EXPECT_NE(std::string(message).find("cpu refused"), std::string::npos) << message;
  EXPECT_NE(std::string(message).find("with ctimer instead"), std::string::npos) << message;
  ASSERT_NO_FATAL_FAILURE(BurnAndCount("ctimer", Engine::kCpuTimer));

  RefuseSyscall(SYS_timer_create);
  ASSERT_EQ(ctxprof_start("event=cpu,interval=10ms", message, sizeof(message)), 0) << message;
  printf("start message: %s\n", message);
  EXPECT_NE(std::string(message).find("ctimer refused"), std::string::npos) << message;
  EXPECT_NE(std::string(message).find("with itimer instead"), std::string::npos) << message;
  ASSERT_NO_FATAL_FAILURE(BurnAndCount("itimer", Engine::kITimer));

  // Explicitly requested itimer has nothing to fall back to; a refused one is an error.
  RefuseSyscall(SYS_setitimer);
  EXPECT_EQ(ctxprof_start("event=cpu", message, sizeof(message)), CTXPROF_EUNAVAIL);
  EXPECT_NE(std::string(message).find("no CPU sampling engine could start"), std::string::npos)
      << message;
  EXPECT_FALSE(Profiler::Global()->Stats().running);
}

}  // namespace
}  // namespace ctxprof
