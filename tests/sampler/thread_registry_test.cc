// ThreadRegistry: a native program's threads are found by looking at /proc/self/task; with a
// runtime that reports its threads (OnThreadStart/OnThreadEnd) the looking is less frequent,
// yet a thread the runtime does not report (a JVM's GC or compiler thread) is still found, and
// one it reports is armed at once.
#include "profiler/sampler/thread_registry.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include "profiler/sampler/engine.h"

namespace ctxprof {
namespace {

// Records which threads the registry arms; the registry serialises its calls.
class ArmedThreads : public SamplingEngine {
 public:
  Engine kind() const override { return Engine::kWall; }
  const char* name() const override { return "armed_threads"; }
  Status Start(bool*) override { return Status(); }
  void Stop() override {}
  void AddThread(pid_t tid) override {
    std::lock_guard<std::mutex> lock(mutex_);
    armed_.insert(tid);
  }
  void RemoveThread(pid_t tid) override {
    std::lock_guard<std::mutex> lock(mutex_);
    armed_.erase(tid);
  }
  bool armed(pid_t tid) {
    std::lock_guard<std::mutex> lock(mutex_);
    return armed_.count(tid) != 0;
  }

 private:
  std::mutex mutex_;
  std::set<pid_t> armed_;
};

// A thread that lives until released, and its tid.
class ParkedThread {
 public:
  ParkedThread()
      : thread_([this] {
          tid_.store(static_cast<pid_t>(syscall(SYS_gettid)));
          while (!release_.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }) {
    while (tid_.load() == 0) std::this_thread::yield();
  }
  ~ParkedThread() {
    release_.store(true);
    thread_.join();
  }
  pid_t tid() const { return tid_.load(); }

 private:
  std::atomic<pid_t> tid_{0};
  std::atomic<bool> release_{false};
  std::thread thread_;
};

// Calls RescanIfChanged as the background thread would, every 20 ms, until `done` or a minute
// has passed (far beyond any interval: only a registry that never finds the thread fails).
template <typename Done>
bool RescanUntil(ThreadRegistry* registry, Done done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (std::chrono::steady_clock::now() < deadline) {
    registry->RescanIfChanged();
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

class ThreadRegistryTest : public ::testing::TestWithParam<bool> {};

TEST_P(ThreadRegistryTest, UnreportedThreadsAreFoundAndDisarmedWhenGone) {
  ArmedThreads engine;
  ThreadRegistry registry({&engine}, /*runtime_reports_threads=*/GetParam());
  registry.Rescan();
  pid_t tid = 0;
  {
    ParkedThread thread;
    tid = thread.tid();
    EXPECT_TRUE(RescanUntil(&registry, [&] { return engine.armed(tid); })) << "never armed";
  }
  EXPECT_TRUE(RescanUntil(&registry, [&] { return !engine.armed(tid); })) << "never disarmed";
}

TEST_P(ThreadRegistryTest, ReportedThreadsAreArmedAtOnce) {
  ArmedThreads engine;
  ThreadRegistry registry({&engine}, GetParam());
  ParkedThread thread;
  registry.OnThreadStart(thread.tid());
  EXPECT_TRUE(engine.armed(thread.tid()));
  registry.OnThreadEnd(thread.tid());
  EXPECT_FALSE(engine.armed(thread.tid()));
}

INSTANTIATE_TEST_SUITE_P(Runtime, ThreadRegistryTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "ReportsThreads" : "Native";
                         });

}  // namespace
}  // namespace ctxprof
