// InFlight's contract: after enabled = false and Drain(), no thread is inside, and none enters
// until enabled again; threads sharing a stripe (the same tid modulo the stripes) count apart.
#include "profiler/sampler/in_flight.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace ctxprof {
namespace {

void Deactivations(bool shared_stripe) {
  InFlight in_flight;
  std::atomic<bool> enabled{true};
  std::atomic<bool> stop{false};
  std::atomic<int> inside{0};
  std::atomic<uint64_t> entries{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; t++) {
    const int32_t tid = shared_stripe ? 7 + t * static_cast<int32_t>(InFlight::kStripes) : 7 + t;
    threads.emplace_back([&, tid] {
      while (!stop.load(std::memory_order_relaxed)) {
        std::atomic<int32_t>* stripe = in_flight.Enter(tid);
        const bool entered = enabled.load(std::memory_order_seq_cst);
        if (entered) {
          inside.fetch_add(1, std::memory_order_relaxed);
          entries.fetch_add(1, std::memory_order_relaxed);
          inside.fetch_sub(1, std::memory_order_relaxed);
        }
        InFlight::Leave(stripe);
        // A deactivated session sees a thread at its next signal or event, not in a tight
        // loop: Drain sleeps while a stripe is busy.
        if (!entered) std::this_thread::yield();
      }
    });
  }
  for (int cycle = 0; cycle < 100; cycle++) {
    const uint64_t before = entries.load(std::memory_order_relaxed);
    while (entries.load(std::memory_order_relaxed) < before + 100) std::this_thread::yield();
    enabled.store(false, std::memory_order_seq_cst);
    in_flight.Drain();
    ASSERT_EQ(inside.load(std::memory_order_relaxed), 0) << "cycle " << cycle;
    const uint64_t drained = entries.load(std::memory_order_relaxed);
    for (int spin = 0; spin < 1000; spin++) std::this_thread::yield();
    ASSERT_EQ(entries.load(std::memory_order_relaxed), drained)
        << "a thread entered after Drain, cycle " << cycle;
    enabled.store(true, std::memory_order_seq_cst);
  }
  stop = true;
  for (std::thread& thread : threads) thread.join();
}

TEST(InFlightTest, NoThreadIsInsideAfterDrain) { Deactivations(/*shared_stripe=*/false); }

TEST(InFlightTest, ThreadsOnOneStripeAllCount) { Deactivations(/*shared_stripe=*/true); }

}  // namespace
}  // namespace ctxprof
