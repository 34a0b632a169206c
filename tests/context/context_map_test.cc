#include "context/context_map.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <thread>

namespace ctxprof {
namespace {

std::string WriteTempFile(const std::string& name, const std::string& contents) {
  const char* dir = getenv("TEST_TMPDIR");
  const std::string path = std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
  std::ofstream(path) << contents;
  return path;
}

TEST(ContextMapTest, DefaultCapacityFollowsPidMaxWithHeadroom) {
  EXPECT_EQ(ContextMap::DefaultCapacity(WriteTempFile("small", "32768\n").c_str()),
            ContextMap::kMinCapacity);
  EXPECT_EQ(ContextMap::DefaultCapacity(WriteTempFile("medium", "65536\n").c_str()),
            65536 * ContextMap::kPidMaxHeadroom);
  EXPECT_EQ(ContextMap::DefaultCapacity(WriteTempFile("large", "4194304\n").c_str()),
            ContextMap::kMaxCapacity);
  EXPECT_EQ(ContextMap::DefaultCapacity(WriteTempFile("absurd", "18446744073709551615\n").c_str()),
            ContextMap::kMaxCapacity);
  EXPECT_EQ(ContextMap::DefaultCapacity(WriteTempFile("garbage", "lots\n").c_str()),
            ContextMap::kMaxCapacity);
  EXPECT_EQ(ContextMap::DefaultCapacity("/nonexistent/pid_max"), ContextMap::kMaxCapacity);
  EXPECT_GE(ContextMap::DefaultCapacity(), ContextMap::kMinCapacity);
}

TEST(ContextMapTest, RejectsImpossibleCapacitiesWithAMessage) {
  std::string error;
  EXPECT_EQ(ContextMap::Create(0, &error), nullptr);
  EXPECT_NE(error.find("capacity 0"), std::string::npos) << error;
  EXPECT_EQ(ContextMap::Create(ContextMap::kMaxCapacity + 1, &error), nullptr);
  EXPECT_NE(error.find("out of range"), std::string::npos) << error;
}

TEST(ContextMapTest, TidsOutsideTheMapGetNoBlockAndAreCounted) {
  std::string error;
  ContextMap* map = ContextMap::Create(1000, &error);
  ASSERT_NE(map, nullptr) << error;
  EXPECT_NE(map->BlockFor(0), nullptr);
  EXPECT_NE(map->BlockFor(999), nullptr);
  EXPECT_EQ(map->out_of_range_lookups(), 0u);
  EXPECT_EQ(map->BlockFor(1000), nullptr);
  EXPECT_EQ(map->BlockFor(1 << 30), nullptr);
  EXPECT_EQ(map->BlockFor(-1), nullptr);
  EXPECT_EQ(map->out_of_range_lookups(), 3u);
  map->OnThreadStart(5000);  // out of range: a no-op, never a write elsewhere
  map->OnThreadEnd(-7);
  EXPECT_EQ(map->out_of_range_lookups(), 5u);
}

TEST(ContextMapTest, BlocksAreDistinctAlignedAndInitiallyEmpty) {
  std::string error;
  ContextMap* map = ContextMap::Create(ContextMap::kMinCapacity, &error);
  ASSERT_NE(map, nullptr) << error;
  for (pid_t tid : {0, 1, 63, 64, 4095, 131071}) {
    ContextBlock* block = map->BlockFor(tid);
    ASSERT_NE(block, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(block) % 64, 0u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(block) - reinterpret_cast<uintptr_t>(map->BlockFor(0)),
              static_cast<uintptr_t>(tid) * 64);
    ContextSnapshot snapshot;
    ASSERT_EQ(ReadBlock(*block, &snapshot, 1), ReadStatus::kConsistent);
    EXPECT_TRUE(snapshot.empty());
  }
}

TEST(ContextMapTest, LifecycleClearsTheCallingThreadsBlock) {
  std::string error;
  ContextMap* map = ContextMap::Create(ContextMap::kMinCapacity, &error);
  ASSERT_NE(map, nullptr) << error;
  const pid_t tid = CurrentTid();
  ASSERT_EQ(tid, gettid());
  ContextBlock* block = map->BlockFor(tid);
  ASSERT_NE(block, nullptr);
  ContextSnapshot snapshot;

  BlockWriter(block).SetSpanId(5);  // left behind by a "previous owner" of this tid
  map->OnThreadStart(tid);
  ASSERT_EQ(ReadBlock(*block, &snapshot, 1), ReadStatus::kConsistent);
  EXPECT_TRUE(snapshot.empty());

  {
    BlockWriter writer(block);
    writer.SetTraceId(1, 2);
    writer.SetAttribute(0, 3);
  }
  map->OnThreadEnd(tid);
  ASSERT_EQ(ReadBlock(*block, &snapshot, 1), ReadStatus::kConsistent);
  EXPECT_TRUE(snapshot.empty());
}

TEST(ContextMapTest, GlobalMapIsCreatedOnceAndCoversThisThread) {
  ContextMap* map = ContextMap::Global();
  ASSERT_NE(map, nullptr) << ContextMap::GlobalError();
  EXPECT_EQ(map, ContextMap::Global());
  EXPECT_NE(map->BlockFor(CurrentTid()), nullptr);
}

TEST(ContextMapTest, CachedTidIsPerThreadAndRenewedInAForkChild) {
  EXPECT_EQ(CachedTid(), CurrentTid());
  pid_t other = 0;
  std::thread([&other] { other = CachedTid(); }).join();
  EXPECT_NE(other, CachedTid());
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  const pid_t child = fork();
  if (child == 0) {
    const char ok = CachedTid() == CurrentTid() && CurrentTid() == getpid() ? 'y' : 'n';
    (void)!write(pipe_fds[1], &ok, 1);
    _exit(0);
  }
  char ok = 0;
  ASSERT_EQ(read(pipe_fds[0], &ok, 1), 1);
  EXPECT_EQ(ok, 'y') << "a fork child must not keep its parent thread's tid";
  waitpid(child, nullptr, 0);
}

}  // namespace
}  // namespace ctxprof
