// The DWARF walker (StackWalker::Method::kDwarf, unwind=dwarf) against ground truth: a call
// chain compiled without frame pointers (native_chain.h), walked from real signals raised inside
// it, from a signal that interrupted another handler, and from the profiler's own handler while
// a thread spins in it; every walk must contain the chain in order. Then what must end a walk
// without crashing: a corrupt stack, a pc in no known object, random stack contents; and a
// library loaded after the tables were built, walked once they are rescanned.
#include <dlfcn.h>
#include <elf.h>
#include <gtest/gtest.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "profiler/ctxprof.h"
#include "profiler/profiler.h"
#include "profiler/sampler/cfi_registry.h"
#include "profiler/sampler/fault_guard.h"
#include "profiler/sampler/machine_context.h"
#include "profiler/sampler/stack_walker.h"
#include "profiler/symbols/symbolizer.h"
#include "tests/sampler/native_chain.h"
#include "tests/support/session_test_util.h"

namespace ctxprof {
namespace {

using ::ctxprof::testing::ChainOuter;
using ::ctxprof::testing::FrameIs;
using ::ctxprof::testing::kChainLeafFirst;
using ::ctxprof::testing::ThreadCpuNanos;

// TSan does not expect a siglongjmp out of its SIGSEGV handling (see stack_walker_test.cc).
#if defined(__SANITIZE_THREAD__)
constexpr bool kDeliberateFaultsSupported = false;
#else
constexpr bool kDeliberateFaultsSupported = true;
#endif

std::vector<std::string> Symbolize(const RawFrame* frames, int count) {
  static Symbolizer* const symbolizer = new Symbolizer();
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) {
    names.push_back(symbolizer->Resolve(frames[i].id, frames[i].bci == kNativeReturnAddress));
  }
  return names;
}

std::string Join(const std::vector<std::string>& frames) {
  std::string text;
  for (const std::string& frame : frames) text += "\n  " + frame;
  return text;
}

// Where the chain's leaf is in `frames` (leaf first) when the whole chain follows it in order,
// else -1.
int FindChain(const std::vector<std::string>& frames) {
  constexpr size_t kLength = sizeof(kChainLeafFirst) / sizeof(kChainLeafFirst[0]);
  for (size_t i = 0; i + kLength <= frames.size(); ++i) {
    bool whole = true;
    for (size_t k = 0; k < kLength && whole; ++k)
      whole = FrameIs(frames[i + k], kChainLeafFirst[k]);
    if (whole) return static_cast<int>(i);
  }
  return -1;
}

bool Mentions(const std::vector<std::string>& frames, const std::string& function) {
  for (const std::string& frame : frames) {
    if (FrameIs(frame, function)) return true;
  }
  return false;
}

// One walk taken inside a signal handler, kept for the test body to check.
struct CapturedWalk {
  RawFrame frames[256];
  int count = 0;
  bool truncated = false;
};

CapturedWalk g_walk;
StackWalker::Method g_method = StackWalker::Method::kDwarf;

class DwarfWalkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The libunwind walk is the ground truth's cross-check.
    for (auto method : {StackWalker::Method::kDwarf, StackWalker::Method::kLibunwind}) {
      const Status init = StackWalker::Init(method);
      ASSERT_TRUE(init.ok()) << init.message();
    }
    g_walk = CapturedWalk();
  }

  // Installs `handler` for `signal` (SA_SIGINFO, nothing blocked) for the test's duration.
  void Handle(int signal, void (*handler)(int, siginfo_t*, void*)) {
    struct sigaction action;
    memset(&action, 0, sizeof(action));
    action.sa_sigaction = handler;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    struct sigaction previous;
    ASSERT_EQ(sigaction(signal, &action, &previous), 0);
    restore_.push_back({signal, previous});
  }

  void TearDown() override {
    for (auto& [signal, previous] : restore_) sigaction(signal, &previous, nullptr);
  }

 private:
  std::vector<std::pair<int, struct sigaction>> restore_;
};

void WalkFromSignal(int, siginfo_t*, void* ucontext) {
  g_walk.count = StackWalker::Walk(ucontext, g_walk.frames, 256, &g_walk.truncated, g_method);
}

bool RaiseInLeaf(void*) {
  pthread_kill(pthread_self(), SIGUSR1);
  return false;
}

__attribute__((noinline)) void RunChainRaisingInLeaf() {
  ChainOuter(&RaiseInLeaf, nullptr);
  asm volatile("" ::: "memory");
}

// The chain, walked from the ucontext of a signal raised under its leaf, from the interrupted
// pc (in libc's pthread_kill) through the callback, the four chain functions and the test body
// to the thread's root frame (_start: the walk is complete, not truncated). libunwind agrees
// frame for frame; the frame-pointer chain does not find the chain (the ground truth really
// has no frame pointers).
TEST_F(DwarfWalkerTest, WalksAChainWithoutFramePointersFromASignal) {
  Handle(SIGUSR1, &WalkFromSignal);
  g_method = StackWalker::Method::kDwarf;
  RunChainRaisingInLeaf();
  const std::vector<std::string> dwarf = Symbolize(g_walk.frames, g_walk.count);
  EXPECT_FALSE(g_walk.truncated) << Join(dwarf);
  const int leaf = FindChain(dwarf);
  ASSERT_GE(leaf, 1) << Join(dwarf);
  EXPECT_TRUE(FrameIs(dwarf[leaf - 1], "RaiseInLeaf")) << Join(dwarf);
  ASSERT_LT(leaf + 4, g_walk.count);
  EXPECT_TRUE(FrameIs(dwarf[leaf + 4], "RunChainRaisingInLeaf")) << Join(dwarf);
  EXPECT_EQ(g_walk.frames[0].bci, kNativeInterruptedPc);
  for (int i = 1; i < g_walk.count; ++i) EXPECT_EQ(g_walk.frames[i].bci, kNativeReturnAddress);

  g_method = StackWalker::Method::kLibunwind;
  RunChainRaisingInLeaf();
  const std::vector<std::string> libunwind = Symbolize(g_walk.frames, g_walk.count);
  EXPECT_EQ(Join(dwarf), Join(libunwind));

  g_method = StackWalker::Method::kFramePointer;
  RunChainRaisingInLeaf();
  const std::vector<std::string> fp = Symbolize(g_walk.frames, g_walk.count);
  EXPECT_EQ(FindChain(fp), -1) << "the chain has frame pointers after all:" << Join(fp);
  EXPECT_FALSE(Mentions(fp, kChainLeafFirst[1])) << Join(fp);
}

void RaiseSecondSignal(int, siginfo_t*, void*) { pthread_kill(pthread_self(), SIGUSR2); }

// A handler interrupted by another signal: the walk from the inner signal's ucontext goes
// through the outer handler, the signal return trampoline (glibc's __restore_rt, whose unwind
// rule is the kernel's signal frame) and on into the chain that raised the outer signal.
TEST_F(DwarfWalkerTest, WalksThroughANestedSignalFrame) {
  Handle(SIGUSR1, &RaiseSecondSignal);
  Handle(SIGUSR2, &WalkFromSignal);
  g_method = StackWalker::Method::kDwarf;
  RunChainRaisingInLeaf();
  const std::vector<std::string> frames = Symbolize(g_walk.frames, g_walk.count);
  EXPECT_FALSE(g_walk.truncated) << Join(frames);
  int outer_handler = -1;
  for (int i = 0; i < g_walk.count && outer_handler < 0; ++i) {
    if (FrameIs(frames[i], "RaiseSecondSignal")) outer_handler = i;
  }
  ASSERT_GE(outer_handler, 1) << Join(frames);
  const int leaf = FindChain(frames);
  ASSERT_GT(leaf, outer_handler + 1) << Join(frames);
  // The frame the trampoline resumes is an interrupted pc, like the first one.
  int interrupted = 0;
  for (int i = 0; i < g_walk.count; ++i)
    interrupted += g_walk.frames[i].bci == kNativeInterruptedPc;
  EXPECT_EQ(interrupted, 2) << Join(frames);
}

// The profiler's own handler, sampling a thread that spins in the chain (and in the callback and
// vDSO clock reads under it): every sample that has any frame of the chain has all of it, in
// order, above the thread's body.
struct SpinBudget {
  uint64_t until_cpu_ns;
};

bool SpinUntilBudget(void* budget) {
  return ThreadCpuNanos() < static_cast<SpinBudget*>(budget)->until_cpu_ns;
}

__attribute__((noinline)) void SpinInChainThread() {
  SpinBudget budget{ThreadCpuNanos() + 400 * 1000 * 1000ull};
  ChainOuter(&SpinUntilBudget, &budget);
  asm volatile("" ::: "memory");
}

TEST_F(DwarfWalkerTest, EverySampleOfTheProfilerHasTheWholeChain) {
  char error[512];
  ASSERT_EQ(ctxprof_start("event=cpu,interval=1ms,unwind=dwarf", error, sizeof(error)), 0) << error;
  std::thread spinner(&SpinInChainThread);
  spinner.join();
  ASSERT_EQ(ctxprof_stop(), 0);
  uint64_t chain_samples = 0;
  for (const AggregatedStack& stack : Profiler::Global()->Stacks()) {
    bool any = false;
    for (const char* function : kChainLeafFirst) any = any || Mentions(stack.frames, function);
    if (!any) continue;
    chain_samples += stack.samples;
    const int leaf = FindChain(stack.frames);
    ASSERT_GE(leaf, 0) << Join(stack.frames);
    ASSERT_LT(leaf + 4, static_cast<int>(stack.frames.size())) << Join(stack.frames);
    EXPECT_TRUE(FrameIs(stack.frames[leaf + 4], "SpinInChainThread")) << Join(stack.frames);
  }
  // 400 ms of CPU at 1 ms (ctimer: 4 ms ticks) gives ~100-400 samples; far fewer means the
  // engine did not sample the thread, not a walker property.
  EXPECT_GE(chain_samples, 20u);
}

__attribute__((noinline)) void LeafFunction() { asm volatile("" ::: "memory"); }

ucontext_t ContextAt(uintptr_t pc, uintptr_t sp) {
  ucontext_t context;
  getcontext(&context);
  MachineContext(&context).SetFrame(pc, sp, 0);
  return context;
}

// A stack pointer into an inaccessible page: the first step's read faults, FaultGuard recovers,
// the walk keeps the leaf and is truncated.
TEST_F(DwarfWalkerTest, UnmappedStackEndsTheWalkTruncated) {
  if (!kDeliberateFaultsSupported) GTEST_SKIP() << "deliberate faults are not supported under TSan";
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* guard = mmap(nullptr, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(guard, MAP_FAILED);
  ucontext_t context = ContextAt(reinterpret_cast<uintptr_t>(&LeafFunction),
                                 reinterpret_cast<uintptr_t>(guard) + 64);
  const uint64_t faults = FaultGuard::recovered_faults();
  RawFrame frames[16];
  bool truncated = false;
  EXPECT_EQ(StackWalker::Walk(&context, frames, 16, &truncated), 1);
  EXPECT_TRUE(truncated);
  EXPECT_EQ(frames[0].id, reinterpret_cast<uint64_t>(&LeafFunction));
  EXPECT_EQ(FaultGuard::recovered_faults(), faults + 1);
  munmap(guard, page);
}

// A pc that no loaded object's code covers (JIT code, a wild jump): the walk records it and
// ends truncated, without reading the stack.
TEST_F(DwarfWalkerTest, PcInNoKnownObjectEndsTheWalk) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* code = mmap(nullptr, page, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(code, MAP_FAILED);
  uint64_t stack[8] = {};
  ucontext_t context =
      ContextAt(reinterpret_cast<uintptr_t>(code) + 16, reinterpret_cast<uintptr_t>(stack));
  RawFrame frames[16];
  bool truncated = false;
  EXPECT_EQ(StackWalker::Walk(&context, frames, 16, &truncated), 1);
  EXPECT_TRUE(truncated);
  munmap(code, page);
}

// The test executable's .plt (lazy-binding stubs of 16 bytes: jmp *GOT; push index; jmp PLT0),
// from its section headers, as an address range in this process; {0, 0} when there is none.
AddressRange ExecutablePlt() {
  std::ifstream file("/proc/self/exe", std::ios::binary);
  const std::string image((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (image.size() < sizeof(Elf64_Ehdr)) return {0, 0};
  const auto* header = reinterpret_cast<const Elf64_Ehdr*>(image.data());
  const auto* sections = reinterpret_cast<const Elf64_Shdr*>(image.data() + header->e_shoff);
  const char* names = image.data() + sections[header->e_shstrndx].sh_offset;
  uintptr_t bias = 0;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        *static_cast<uintptr_t*>(out) = info->dlpi_addr;  // the first object is the executable
        return 1;
      },
      &bias);
  for (int i = 0; i < header->e_shnum; ++i) {
    if (strcmp(names + sections[i].sh_name, ".plt") == 0) {
      return {bias + sections[i].sh_addr, bias + sections[i].sh_addr + sections[i].sh_size};
    }
  }
  return {0, 0};
}

// A thread interrupted in a PLT stub: before the stub pushed its index the return address is at
// sp, after it (from byte 11 of the stub on) at sp + 8; the CFI says so with a DWARF expression
// that the table compiles to a PLT rule. Both positions find the caller.
TEST_F(DwarfWalkerTest, WalksOutOfAPltStub) {
  const AddressRange plt = ExecutablePlt();
  ASSERT_GE(plt.end - plt.start, 32u) << "the test executable has no .plt with a stub";
  const uintptr_t stub = plt.start + 16;  // the first stub after PLT0
  const uintptr_t caller = reinterpret_cast<uintptr_t>(&RunChainRaisingInLeaf) + 8;
  for (const int offset : {0, 6, 11, 15}) {
    const int pushed = offset >= 11 ? 1 : 0;
    uintptr_t stack[4] = {0x1234, 0x1234, 0, 0};
    stack[pushed] = caller;
    ucontext_t context = ContextAt(stub + offset, reinterpret_cast<uintptr_t>(stack));
    RawFrame frames[2];
    bool truncated = false;
    ASSERT_EQ(StackWalker::Walk(&context, frames, 2, &truncated), 2) << "offset " << offset;
    EXPECT_EQ(frames[0].id, stub + offset);
    EXPECT_EQ(frames[1].id, caller) << "offset " << offset;
    EXPECT_EQ(frames[1].bci, kNativeReturnAddress);
  }
}

// Stacks of random words, half of them return addresses into real code: every walk ends within
// its depth without a crash (reads that fault are recovered).
TEST_F(DwarfWalkerTest, RandomStackContentsNeverCrash) {
  if (!kDeliberateFaultsSupported) GTEST_SKIP() << "deliberate faults are not supported under TSan";
  std::mt19937_64 random(12345);
  const uintptr_t code[] = {
      reinterpret_cast<uintptr_t>(&LeafFunction), reinterpret_cast<uintptr_t>(&ChainOuter),
      reinterpret_cast<uintptr_t>(&RunChainRaisingInLeaf), reinterpret_cast<uintptr_t>(&memcpy)};
  std::vector<uintptr_t> stack(4096);
  for (int round = 0; round < 500; ++round) {
    for (uintptr_t& word : stack) {
      switch (random() % 4) {
        case 0:
          word = code[random() % 4] + random() % 64;
          break;
        case 1:
          word = reinterpret_cast<uintptr_t>(&stack[random() % stack.size()]);
          break;
        default:
          word = random();
      }
    }
    ucontext_t context = ContextAt(code[random() % 4] + random() % 32,
                                   reinterpret_cast<uintptr_t>(&stack[random() % 64]));
    RawFrame frames[64];
    bool truncated = false;
    const int count = StackWalker::Walk(&context, frames, 64, &truncated);
    ASSERT_GE(count, 1);
    ASSERT_LE(count, 64);
  }
}

// A library dlopen'ed after the tables were built: its frames end the walk (truncated) until the
// tables are refreshed, which finds it (the loader's counters changed) and walks through it.
bool WalkFromPlugin(void* result) {
  ucontext_t context;
  getcontext(&context);
  CapturedWalk& walk = *static_cast<CapturedWalk*>(result);
  walk.count = StackWalker::Walk(&context, walk.frames, 256, &walk.truncated);
  return false;
}

TEST_F(DwarfWalkerTest, LibraryLoadedLaterIsWalkedAfterARescan) {
  const std::string path =
      std::string(getenv("TEST_SRCDIR")) + "/ctxprof/tests/sampler/libchain_plugin.so";
  CfiRegistry::Refresh();
  const CfiRegistry::Stats before = CfiRegistry::stats();
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << dlerror();
  using PluginCall = uint64_t (*)(testing::AtLeaf, void*);
  auto call = reinterpret_cast<PluginCall>(dlsym(library, "PluginCall"));
  ASSERT_NE(call, nullptr) << dlerror();

  CapturedWalk stale;
  call(&WalkFromPlugin, &stale);
  const std::vector<std::string> stale_frames = Symbolize(stale.frames, stale.count);
  EXPECT_TRUE(stale.truncated) << Join(stale_frames);
  ASSERT_EQ(stale.count, 2) << Join(stale_frames);
  EXPECT_TRUE(FrameIs(stale_frames[1], "PluginCall")) << Join(stale_frames);

  CfiRegistry::Refresh();
  EXPECT_EQ(CfiRegistry::stats().scans, before.scans + 1);
  EXPECT_EQ(CfiRegistry::stats().objects, before.objects + 1);
  CapturedWalk fresh;
  call(&WalkFromPlugin, &fresh);
  const std::vector<std::string> frames = Symbolize(fresh.frames, fresh.count);
  EXPECT_FALSE(fresh.truncated) << Join(frames);
  ASSERT_GT(fresh.count, 3) << Join(frames);
  EXPECT_TRUE(FrameIs(frames[1], "PluginCall")) << Join(frames);
  EXPECT_TRUE(FrameIs(frames[2], "TestBody")) << Join(frames);

  // Nothing changed: no rescan. After dlclose the next refresh drops the plugin's table.
  CfiRegistry::Refresh();
  EXPECT_EQ(CfiRegistry::stats().scans, before.scans + 1);
  ASSERT_EQ(dlclose(library), 0);
  CfiRegistry::Refresh();
  EXPECT_EQ(CfiRegistry::stats().scans, before.scans + 2);
  EXPECT_EQ(CfiRegistry::stats().objects, before.objects);
}

}  // namespace
}  // namespace ctxprof
