// LiveObjects: bounded tracking, forgetting collected objects when full, and every reference
// given back exactly once.
#include "profiler/jfr_events/live_objects.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <vector>

namespace ctxprof {
namespace {

// Objects 1, 2, 3, ...; the test says which are collected. Counts every call.
class FakeTracker : public ObjectTracker {
 public:
  bool Alive(uint64_t ref) override {
    alive_calls++;
    EXPECT_EQ(released.count(ref), 0u) << "Alive() after Release() of " << ref;
    return collected.count(ref) == 0;
  }
  void Release(uint64_t ref) override {
    EXPECT_TRUE(released.insert(ref).second) << "released twice: " << ref;
  }
  std::set<uint64_t> collected;
  std::set<uint64_t> released;
  int alive_calls = 0;
};

TrackedAllocation Allocation(uint64_t ref) {
  return TrackedAllocation{ref, 1000 + ref, 7, 1, 2, 16 * ref, ContextSnapshot{}};
}

TEST(LiveObjectsTest, FinishReportsTheLiveInOrderAndReleasesAll) {
  FakeTracker tracker;
  LiveObjects live(&tracker, 10);
  for (uint64_t ref = 1; ref <= 5; ref++) live.Add(Allocation(ref));
  tracker.collected = {2, 4};
  std::vector<uint64_t> reported;
  live.Finish([&](const TrackedAllocation& allocation) {
    reported.push_back(allocation.ref);
    EXPECT_EQ(allocation.object_bytes, 16 * allocation.ref);
    EXPECT_EQ(allocation.ticks, 1000 + allocation.ref);
  });
  EXPECT_EQ(reported, (std::vector<uint64_t>{1, 3, 5}));
  EXPECT_EQ(tracker.released, (std::set<uint64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(live.tracked(), 0u);
}

TEST(LiveObjectsTest, WhenFullForgetsTheCollectedThenStopsTracking) {
  FakeTracker tracker;
  {
    LiveObjects live(&tracker, 4);
    for (uint64_t ref = 1; ref <= 4; ref++) live.Add(Allocation(ref));
    EXPECT_EQ(tracker.alive_calls, 0);  // no sweep before it is full
    tracker.collected = {1, 3};
    live.Add(Allocation(5));  // sweeps: 1 and 3 go, 5 fits
    EXPECT_EQ(tracker.released, (std::set<uint64_t>{1, 3}));
    EXPECT_EQ(live.tracked(), 3u);
    live.Add(Allocation(6));
    live.Add(Allocation(7));  // full of live objects: 7 is given back at once
    EXPECT_EQ(live.untracked(), 1u);
    EXPECT_EQ(tracker.released, (std::set<uint64_t>{1, 3, 7}));
  }
  // The destructor gives back what it still held.
  EXPECT_EQ(tracker.released, (std::set<uint64_t>{1, 2, 3, 4, 5, 6, 7}));
}

}  // namespace
}  // namespace ctxprof
