#include "profiler/sampler/stack_walker.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "profiler/sampler/fault_guard.h"
#include "profiler/sampler/machine_context.h"
#include "profiler/symbols/symbolizer.h"

namespace ctxprof {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitizerHandlesFaults = true;
#else
constexpr bool kSanitizerHandlesFaults = false;
#endif

// TSan wraps signal handlers and does not expect a siglongjmp out of a SIGSEGV handler: after
// the first recovered fault its own bookkeeping treats the next SIGSEGV as a nested bug and
// kills the process. The tests that fault on purpose cannot run under TSan.
#if defined(__SANITIZE_THREAD__)
#define SKIP_DELIBERATE_FAULTS_UNDER_TSAN() \
  GTEST_SKIP() << "deliberate fault recovery is not supported under TSan"
#else
#define SKIP_DELIBERATE_FAULTS_UNDER_TSAN() \
  do {                                      \
  } while (false)
#endif

__attribute__((noinline)) int WalkFromHere(RawFrame* frames, int max_depth, bool* truncated,
                                           StackWalker::Method method) {
  ucontext_t context;
  getcontext(&context);
  return StackWalker::Walk(&context, frames, max_depth, truncated, method);
}

__attribute__((noinline)) int Recurse(int levels, RawFrame* frames, int max_depth, bool* truncated,
                                      StackWalker::Method method = StackWalker::Method::kDwarf) {
  if (levels == 0) return WalkFromHere(frames, max_depth, truncated, method);
  const int result = Recurse(levels - 1, frames, max_depth, truncated, method);
  asm volatile("" ::: "memory");  // keep the call from becoming a tail call
  return result;
}

class StackWalkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (auto method : {StackWalker::Method::kDwarf, StackWalker::Method::kLibunwind,
                        StackWalker::Method::kFramePointer}) {
      const Status init = StackWalker::Init(method);
      ASSERT_TRUE(init.ok()) << init.message();
    }
  }
};

class StackWalkerMethodTest : public StackWalkerTest,
                              public ::testing::WithParamInterface<StackWalker::Method> {};

TEST_P(StackWalkerMethodTest, WalksTheWholeStackAndNamesFrames) {
  static RawFrame frames[kMaxStackDepth];
  bool truncated = true;
  const int count = Recurse(20, frames, kMaxStackDepth, &truncated, GetParam());
  EXPECT_FALSE(truncated);
  Symbolizer symbolizer;
  int recurse_frames = 0;
  for (int i = 0; i < count; ++i) {
    if (symbolizer.Resolve(frames[i].id, i > 0).find("Recurse") != std::string::npos) {
      ++recurse_frames;
    }
  }
  EXPECT_EQ(recurse_frames, 21);
  EXPECT_NE(symbolizer.Resolve(frames[0].id, false).find("WalkFromHere"), std::string::npos);
}

TEST_P(StackWalkerMethodTest, DepthLimitTruncates) {
  RawFrame frames[10];
  bool truncated = false;
  const int count = Recurse(50, frames, 10, &truncated, GetParam());
  EXPECT_EQ(count, 10);
  EXPECT_TRUE(truncated);
}

INSTANTIATE_TEST_SUITE_P(Methods, StackWalkerMethodTest,
                         ::testing::Values(StackWalker::Method::kDwarf,
                                           StackWalker::Method::kLibunwind,
                                           StackWalker::Method::kFramePointer),
                         [](const auto& info) {
                           switch (info.param) {
                             case StackWalker::Method::kDwarf:
                               return "dwarf";
                             case StackWalker::Method::kLibunwind:
                               return "libunwind";
                             case StackWalker::Method::kFramePointer:
                               return "fp";
                           }
                           return "unknown";
                         });

// A frame pointer into an inaccessible page: the first read faults, FaultGuard recovers, the
// walk keeps the leaf and reports truncation.
TEST_F(StackWalkerTest, FramePointerFaultIsRecovered) {
  SKIP_DELIBERATE_FAULTS_UNDER_TSAN();
  const long page = sysconf(_SC_PAGESIZE);
  void* guard =
      mmap(nullptr, static_cast<size_t>(page), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(guard, MAP_FAILED);
  ucontext_t context;
  getcontext(&context);
  MachineContext registers(&context);
  registers.SetFrame(registers.pc(), reinterpret_cast<uintptr_t>(guard),
                     reinterpret_cast<uintptr_t>(guard) + 64);
  const uint64_t faults_before = FaultGuard::recovered_faults();
  RawFrame frames[16];
  bool truncated = false;
  const int count =
      StackWalker::Walk(&context, frames, 16, &truncated, StackWalker::Method::kFramePointer);
  EXPECT_TRUE(truncated);
  EXPECT_EQ(count, 1);
  EXPECT_EQ(FaultGuard::recovered_faults(), faults_before + 1);
  munmap(guard, static_cast<size_t>(page));
}

__attribute__((noinline)) void LeafFunction() { asm volatile("" ::: "memory"); }

// libunwind from a context whose stack pointer points at an inaccessible page: the first step
// cannot read the return address; the walk keeps the leaf, reports truncation and does not
// crash. (libunwind 1.6 validates this particular address itself with mincore + a pipe write;
// FaultGuard catches the reads it does not validate. The DWARF walker's own case is in
// dwarf_walker_test.)
TEST_F(StackWalkerTest, LibunwindFaultDuringWalkIsRecovered) {
  const long page = sysconf(_SC_PAGESIZE);
  void* guard =
      mmap(nullptr, static_cast<size_t>(page), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(guard, MAP_FAILED);
  ucontext_t context;
  getcontext(&context);
  MachineContext(&context).SetFrame(reinterpret_cast<uintptr_t>(&LeafFunction),
                                    reinterpret_cast<uintptr_t>(guard) + 64,
                                    reinterpret_cast<uintptr_t>(guard) + 128);
  RawFrame frames[16];
  bool truncated = false;
  const int count =
      StackWalker::Walk(&context, frames, 16, &truncated, StackWalker::Method::kLibunwind);
  EXPECT_TRUE(truncated);
  EXPECT_EQ(count, 1);
  EXPECT_EQ(frames[0].id, reinterpret_cast<uint64_t>(&LeafFunction));
  munmap(guard, static_cast<size_t>(page));
}

TEST_F(StackWalkerTest, SafeReadReportsFaults) {
  SKIP_DELIBERATE_FAULTS_UNDER_TSAN();
  const long page = sysconf(_SC_PAGESIZE);
  void* guard =
      mmap(nullptr, static_cast<size_t>(page), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(guard, MAP_FAILED);
  uint64_t value = 0;
  EXPECT_FALSE(FaultGuard::SafeRead(guard, &value, sizeof(value)));
  const uint64_t readable = 0x1122334455667788ull;
  EXPECT_TRUE(FaultGuard::SafeRead(&readable, &value, sizeof(value)));
  EXPECT_EQ(value, readable);
  munmap(guard, static_cast<size_t>(page));
}

// A fault outside a guarded region still belongs to the host: it reaches the handler installed
// before ours or, with none, the default action (death by SIGSEGV). Under ASan or TSan the
// previous handler is the sanitizer's, which reports the SEGV and exits (abort or status 66).
TEST(FaultGuardDeathTest, UnguardedFaultIsNotSwallowed) {
  const Status install = FaultGuard::Install();
  ASSERT_TRUE(install.ok()) << install.message();
  auto died_of_the_fault = [](int status) {
    if (kSanitizerHandlesFaults) return !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV;
  };
  // An inaccessible page rather than nullptr: UBSan would report a null store before it faults.
  void* page = mmap(nullptr, static_cast<size_t>(sysconf(_SC_PAGESIZE)), PROT_NONE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(page, MAP_FAILED);
  EXPECT_EXIT(*static_cast<volatile int*>(page) = 1, died_of_the_fault,
              kSanitizerHandlesFaults ? "SEGV" : "");
}

}  // namespace
}  // namespace ctxprof
