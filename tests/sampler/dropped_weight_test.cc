// A sample that finds the buffer full is counted as dropped and its weight is carried to the
// thread's next recorded sample of the same kind (signal_handler.h, "Dropped samples"). The
// signals are queued by the test to its own thread (queued_signal.h): deterministic, no timers.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "context/process_context.h"
#include "profiler/sampler/sample_buffer.h"
#include "profiler/sampler/signal_handler.h"
#include "profiler/sampler/stack_walker.h"
#include "profiler/sampler/tsc_clock.h"
#include "tests/support/queued_signal.h"

namespace ctxprof {
namespace {

const int kSignal = SIGRTMIN + 5;
constexpr uint32_t kSlots = 4;

// Sends our profiling signal to this thread as the wall engine does (SI_QUEUE with the weight)
// or as a CPU timer does (SI_TIMER with overruns: weight 1 + overrun).
void SendWall(int weight) {
  ASSERT_EQ(testing::QueueToThisThread(testing::WallSignal(kSignal, weight)), 0) << strerror(errno);
}

void SendCpu(int overrun) {
  siginfo_t info;
  memset(&info, 0, sizeof(info));
  info.si_signo = kSignal;
  info.si_code = SI_TIMER;
  info.si_overrun = overrun;
  ASSERT_EQ(testing::QueueToThisThread(info), 0) << strerror(errno);
}

struct Drained {
  SampleKind kind;
  uint32_t weight;
};

class DroppedWeightTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    ProcessContext* store = ProcessContext::Get(&error);
    ASSERT_NE(store, nullptr) << error;
    ASSERT_TRUE(StackWalker::Init(StackWalker::Method::kFramePointer).ok());
    const Status installed = SignalHandler::Install(kSignal);
    ASSERT_TRUE(installed.ok()) << installed.message();
    std::string note;
    clock_ = CreateClock(ClockKind::kMonotonic, &note);
    StatusOr<std::unique_ptr<SampleBuffer>> buffer = SampleBuffer::Create(kSlots, 8);
    ASSERT_TRUE(buffer.ok()) << buffer.status().message();
    buffer_ = std::move(buffer.value());
    SignalHandler::Activate(HandlerSession{buffer_.get(), clock_.get(), &store->map(), 8,
                                           StackWalker::Method::kFramePointer});
    active_ = true;
  }
  void TearDown() override {
    if (active_) SignalHandler::Deactivate();
  }

  std::vector<Drained> Drain() {
    std::vector<Drained> drained;
    buffer_->Drain([&](const SampleRecord& record) {
      drained.push_back(Drained{record.kind, record.weight});
    });
    return drained;
  }

  std::unique_ptr<Clock> clock_;
  std::unique_ptr<SampleBuffer> buffer_;
  bool active_ = false;
};

TEST_F(DroppedWeightTest, DroppedWeightGoesToTheNextSampleOfTheSameKind) {
  for (uint32_t i = 0; i < kSlots; ++i) SendWall(3);  // fills the buffer
  SendWall(3);                                        // dropped: 3 wall intervals
  SendWall(5);                                        // dropped: 5 more
  SendCpu(1);                                         // dropped: 2 CPU intervals
  EXPECT_EQ(buffer_->dropped(), 3u);
  std::vector<Drained> full = Drain();
  ASSERT_EQ(full.size(), kSlots);
  for (const Drained& sample : full) EXPECT_EQ(sample.weight, 3u);

  SendCpu(0);   // 1 + the 2 carried
  SendWall(1);  // 1 + the 8 carried
  SendWall(1);  // nothing left to carry
  SendCpu(0);
  const std::vector<Drained> after = Drain();
  ASSERT_EQ(after.size(), 4u);
  uint64_t cpu = 0, wall = 0, first_cpu = 0, first_wall = 0;
  for (const Drained& sample : after) {
    if (sample.kind == SampleKind::kCpu) {
      if (first_cpu == 0) first_cpu = sample.weight;
      cpu += sample.weight;
    } else {
      if (first_wall == 0) first_wall = sample.weight;
      wall += sample.weight;
    }
  }
  // Drain hands records over in slot order, which here is the order they were taken.
  EXPECT_EQ(first_cpu, 3u);
  EXPECT_EQ(first_wall, 9u);
  EXPECT_EQ(cpu, 4u);
  EXPECT_EQ(wall, 10u);
  // Every interval sent is accounted for: 4 * 3 + 3 + 5 + 1 + 1 wall, 2 + 1 + 1 CPU.
  EXPECT_EQ(wall + 4 * 3, 4u * 3 + 3 + 5 + 1 + 1);
  EXPECT_EQ(buffer_->dropped(), 3u);
}

TEST_F(DroppedWeightTest, WeightCarriedFromAnEarlierSessionIsNotAdded) {
  for (uint32_t i = 0; i < kSlots; ++i) SendWall(1);
  SendWall(7);  // dropped, carried within this activation
  ASSERT_EQ(buffer_->dropped(), 1u);
  SignalHandler::Deactivate();
  active_ = false;
  Drain();

  std::string error;
  SignalHandler::Activate(HandlerSession{buffer_.get(), clock_.get(),
                                         &ProcessContext::Get(&error)->map(), 8,
                                         StackWalker::Method::kFramePointer});
  active_ = true;
  SendWall(1);
  const std::vector<Drained> next = Drain();
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].weight, 1u);
}

}  // namespace
}  // namespace ctxprof
