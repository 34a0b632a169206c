// Names of native and kernel frames, end to end (issue 12, item 5): a thread spins in a known
// loop under event=cpu at 1 ms with a JFR file, and the recording (read back with our
// JfrReader, and the JDK's `jfr`) and the in-memory aggregate must name what it spins in:
//  * a clock_gettime loop: the leaf is in the vDSO and named from it (__vdso_clock_gettime),
//    no frame between the leaf and the loop is unnamed;
//  * the thread's root: glibc's start_thread and clone3, named from libc's separate debug
//    file (libc6-dbg; skipped with a message where it is not installed);
//  * a getppid loop: samples start with kernel frames (typed Kernel, named from kallsyms)
//    above libc's getppid, the outermost one the system call entry; with kernel=false, or
//    without the permission for kernel sampling (a child process without capabilities), there
//    are none and the session still samples, its start message saying why.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <link.h>
#include <linux/capability.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "profiler/ctxprof.h"
#include "profiler/jfr/jfr_reader.h"
#include "profiler/profiler.h"
#include "tests/support/session_test_util.h"
#include "tests/support/status_testing.h"

namespace ctxprof {
namespace {

using ::ctxprof::testing::FrameIs;
using ::ctxprof::testing::ThreadCpuNanos;

constexpr uint64_t kLoopCpuNanos = 600ull * 1000 * 1000;

std::atomic<uint64_t> g_sink{0};

__attribute__((noinline)) void VdsoLoop() {
  const uint64_t end = ThreadCpuNanos() + kLoopCpuNanos;
  uint64_t sum = 0;
  do {
    for (int i = 0; i < 2000; ++i) {
      timespec now;
      clock_gettime(CLOCK_MONOTONIC, &now);
      sum += static_cast<uint64_t>(now.tv_nsec);
    }
  } while (ThreadCpuNanos() < end);
  g_sink += sum;
}

__attribute__((noinline)) void SyscallLoop() {
  const uint64_t end = ThreadCpuNanos() + kLoopCpuNanos;
  uint64_t sum = 0;
  do {
    for (int i = 0; i < 200; ++i) sum += static_cast<uint64_t>(getppid());
  } while (ThreadCpuNanos() < end);
  g_sink += sum;
}

// Runs `loop` on a thread made with pthread_create (no libstdc++ frames between the loop and
// glibc's thread root).
void RunOnThread(void (*loop)()) {
  pthread_t thread;
  ASSERT_EQ(pthread_create(
                &thread, nullptr,
                [](void* argument) -> void* {
                  reinterpret_cast<void (*)()>(argument)();
                  return nullptr;
                },
                reinterpret_cast<void*>(loop)),
            0);
  pthread_join(thread, nullptr);
}

std::string TempJfr(const char* name) {
  return std::string(getenv("TEST_TMPDIR") != nullptr ? getenv("TEST_TMPDIR") : "/tmp") + "/" +
         name + ".jfr";
}

// Profiles `loop` at 1 ms with `options` appended; returns the start message.
std::string Profile(void (*loop)(), const std::string& path, const std::string& options) {
  char message[512] = {};
  const std::string all = "event=cpu,interval=1ms,file=" + path + options;
  EXPECT_EQ(ctxprof_start(all.c_str(), message, sizeof(message)), 0) << message;
  RunOnThread(loop);
  EXPECT_EQ(ctxprof_stop(), 0);
  printf("%s: start message \"%s\"\n", all.c_str(), message);
  return message;
}

// The CPU samples of the recording whose stack contains `function`, frames leaf first.
std::vector<std::vector<JfrFrame>> SamplesIn(const std::string& path, const std::string& function) {
  JfrReader reader;
  EXPECT_TRUE(IsOk(reader.Read(path, {})));
  std::vector<std::vector<JfrFrame>> samples;
  for (const JfrEvent& event : reader.events()) {
    if (event.type_name() != "jdk.ExecutionSample") continue;
    std::vector<JfrFrame> frames = JfrReader::FramesOf(event.Field("stackTrace"));
    for (const JfrFrame& frame : frames) {
      if (FrameIs(frame.method_name, function)) {
        samples.push_back(std::move(frames));
        break;
      }
    }
  }
  return samples;
}

bool Unnamed(const JfrFrame& frame) {
  return frame.method_name.empty() || frame.method_name[0] == '[';
}

size_t KernelFrames(const std::vector<JfrFrame>& frames) {
  size_t count = 0;
  for (const JfrFrame& frame : frames) count += frame.type == "Kernel";
  return count;
}

std::string Describe(const std::vector<JfrFrame>& frames) {
  std::string text;
  for (const JfrFrame& frame : frames) {
    text += "\n    " + frame.class_name + " " + frame.method_name + " (" + frame.type + ")";
  }
  return text;
}

TEST(NativeNamesTest, VdsoLeavesAreNamedFromTheVdso) {
  const std::string path = TempJfr("vdso");
  Profile(VdsoLoop, path, "");
  int in_loop = 0, vdso_leaves = 0, named_leaves = 0, helper_leaves = 0, unnamed = 0;
  std::set<std::string> helper_names;
  for (const std::vector<JfrFrame>& frames : SamplesIn(path, "VdsoLoop")) {
    in_loop++;
    // Leaf to loop: the vDSO function (or a static function it calls), libc's clock_gettime,
    // the loop; below kernel frames when an interrupt was being handled.
    size_t first = KernelFrames(frames);
    if (first < frames.size() && frames[first].class_name == "[vdso]") {
      vdso_leaves++;
      if (frames[first].method_name == "__vdso_clock_gettime") {
        named_leaves++;
      } else if (first + 1 < frames.size() &&
                 frames[first + 1].method_name == "__vdso_clock_gettime" &&
                 frames[first].method_name.rfind("[vdso+0x", 0) == 0) {
        // A static function of the vDSO (this VM's kvm-clock reader): the kernel keeps no
        // symbol of it in the image and no debug file of it is installed; it is named by its
        // start, one name for all its samples.
        helper_leaves++;
        helper_names.insert(frames[first].method_name);
        first++;
      } else {
        ADD_FAILURE() << "a vDSO leaf that is not __vdso_clock_gettime:" << Describe(frames);
      }
    }
    for (size_t i = first; i < frames.size(); ++i) {
      const JfrFrame& frame = frames[i];
      if (FrameIs(frame.method_name, "VdsoLoop")) break;
      if (Unnamed(frame)) {
        unnamed++;
        ADD_FAILURE() << "unnamed frame " << frame.method_name << " in" << Describe(frames);
        break;
      }
    }
  }
  printf(
      "%d samples in VdsoLoop, %d with a vDSO leaf: %d in __vdso_clock_gettime, %d in a static "
      "vDSO function it calls (%s); %d with an unnamed frame\n",
      in_loop, vdso_leaves, named_leaves, helper_leaves,
      helper_names.empty() ? "" : helper_names.begin()->c_str(), unnamed);
  EXPECT_LE(helper_names.size(), 1u) << "one static function, one name";
  // ~600 samples on an idle machine (1 ms of the thread's CPU time each).
  EXPECT_GE(in_loop, 200);
  EXPECT_GE(vdso_leaves, in_loop / 4);
  EXPECT_GE(named_leaves, vdso_leaves / 10);
  EXPECT_EQ(unnamed, 0);
}

// The path of libc's debug file by its build id, read from libc's PT_NOTE segments in memory
// (independent of the symbolizer); "" when libc has no build id.
std::string LibcDebugFile() {
  struct Search {
    uintptr_t base;  // libc's load address
    std::string id;  // hex
  } search = {0, ""};
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&getppid), &info) == 0) return "";
  search.base = reinterpret_cast<uintptr_t>(info.dli_fbase);
  dl_iterate_phdr(
      [](dl_phdr_info* object, size_t, void* data) -> int {
        auto* search = static_cast<Search*>(data);
        if (object->dlpi_addr != search->base) return 0;
        for (int i = 0; i < object->dlpi_phnum; ++i) {
          const ElfW(Phdr)& header = object->dlpi_phdr[i];
          if (header.p_type != PT_NOTE) continue;
          const char* note = reinterpret_cast<const char*>(object->dlpi_addr + header.p_vaddr);
          const char* end = note + header.p_memsz;
          while (note + sizeof(ElfW(Nhdr)) <= end) {
            const auto* nhdr = reinterpret_cast<const ElfW(Nhdr)*>(note);
            const char* description = note + sizeof(*nhdr) + ((nhdr->n_namesz + 3) & ~3u);
            if (nhdr->n_type == NT_GNU_BUILD_ID) {
              static const char kHex[] = "0123456789abcdef";
              for (uint32_t b = 0; b < nhdr->n_descsz; ++b) {
                const auto byte = static_cast<unsigned char>(description[b]);
                search->id += kHex[byte >> 4];
                search->id += kHex[byte & 15];
              }
              return 1;
            }
            note = description + ((nhdr->n_descsz + 3) & ~3u);
          }
        }
        return 1;
      },
      &search);
  if (search.id.size() <= 2) return "";
  return "/usr/lib/debug/.build-id/" + search.id.substr(0, 2) + "/" + search.id.substr(2) +
         ".debug";
}

TEST(NativeNamesTest, ThreadRootIsNamedFromLibcDebugFile) {
  const std::string debug_file = LibcDebugFile();
  if (debug_file.empty() || access(debug_file.c_str(), R_OK) != 0) {
    GTEST_SKIP() << "libc's debug file (" << debug_file
                 << ") is not installed; install libc6-dbg to run this test";
  }
  const std::string path = TempJfr("root");
  Profile(VdsoLoop, path, "");
  int in_loop = 0, rooted = 0;
  for (const std::vector<JfrFrame>& frames : SamplesIn(path, "VdsoLoop")) {
    in_loop++;
    const size_t n = frames.size();
    if (n >= 2 && frames[n - 1].method_name == "clone3" &&
        frames[n - 2].method_name == "start_thread") {
      rooted++;
    } else if (rooted + 5 > in_loop) {
      ADD_FAILURE() << "a stack that does not end in start_thread, clone3:" << Describe(frames);
    }
  }
  printf("%d samples in VdsoLoop, %d end in start_thread <- clone3\n", in_loop, rooted);
  EXPECT_GE(in_loop, 200);
  EXPECT_EQ(rooted, in_loop);
}

bool KernelFramesPermitted(std::string* why) {
  // What this process may do: root (or CAP_PERFMON) sample the kernel whatever
  // perf_event_paranoid says; the test below also runs a child without capabilities.
  std::ifstream paranoid("/proc/sys/kernel/perf_event_paranoid");
  int level = 2;
  paranoid >> level;
  if (geteuid() != 0 && level > 1) {
    *why = "perf_event_paranoid=" + std::to_string(level) + " and not root";
    return false;
  }
  return true;
}

TEST(NativeNamesTest, SyscallLoopStartsWithKernelFrames) {
  std::string why;
  if (!KernelFramesPermitted(&why)) GTEST_SKIP() << "no kernel sampling here: " << why;
  const std::string path = TempJfr("kernel");
  const std::string message = Profile(SyscallLoop, path, "");
  if (message.find("kernel frames off") != std::string::npos) {
    GTEST_SKIP() << "the session turned kernel frames off: " << message;
  }
  int in_loop = 0, with_kernel = 0, in_getppid = 0, entry_outermost = 0;
  for (const std::vector<JfrFrame>& frames : SamplesIn(path, "SyscallLoop")) {
    in_loop++;
    const size_t kernel = KernelFrames(frames);
    if (kernel == 0) continue;
    with_kernel++;
    // Kernel frames first (leaf side), every one named, then the user frames from where the
    // thread entered the kernel: getppid's system call; sometimes the loop's clock_gettime
    // (CLOCK_THREAD_CPUTIME_ID is a system call from the vDSO) or an interrupt.
    for (size_t i = 0; i < kernel; ++i) {
      EXPECT_EQ(frames[i].type, "Kernel") << Describe(frames);
      EXPECT_EQ(frames[i].class_name, "[kernel]");
      EXPECT_FALSE(Unnamed(frames[i])) << Describe(frames);
    }
    ASSERT_LT(kernel, frames.size()) << Describe(frames);
    in_getppid += frames[kernel].method_name == "getppid";
#if defined(__x86_64__)
    // The outermost kernel frame is an entry: system calls, interrupts, exceptions; or a
    // retpoline thunk when the kernel's callchain stops there (an interrupt in the vDSO's
    // clock_gettime can leave the thunk as the only kernel frame).
    const std::string& entry = frames[kernel - 1].method_name;
    const bool is_entry = entry.rfind("entry_SYSCALL_64", 0) == 0 || entry.rfind("asm_", 0) == 0 ||
                          entry.rfind("__x86_indirect_thunk_", 0) == 0;
    EXPECT_TRUE(is_entry) << Describe(frames);
    entry_outermost += is_entry;
#else
    entry_outermost++;
#endif
  }
  printf(
      "%d samples in SyscallLoop, %d with kernel frames (%d under getppid), %d of them with an "
      "entry point outermost\n",
      in_loop, with_kernel, in_getppid, entry_outermost);
  EXPECT_GE(in_loop, 200);
  // getppid is almost all kernel time: the user part is a few instructions.
  EXPECT_GE(in_getppid, in_loop / 4);
  EXPECT_EQ(entry_outermost, with_kernel);

  // The in-memory aggregate (ctxprof_dump) marks them as async-profiler does. Its weights, not
  // its record counts, match the recording's events: jdk.ExecutionSample has no weight field,
  // so a record of weight 2 (two overflows that one signal handled) is two events there.
  uint64_t dump_kernel = 0;
  for (const AggregatedStack& stack : Profiler::Global()->Stacks()) {
    if (!testing::StackContains(stack, "SyscallLoop")) continue;
    if (stack.frames[0].size() > 4 &&
        stack.frames[0].compare(stack.frames[0].size() - 4, 4, "_[k]") == 0) {
      dump_kernel += stack.weight;
    }
  }
  EXPECT_EQ(dump_kernel, static_cast<uint64_t>(with_kernel));

  // The JDK's reader types them Kernel too.
  const char* jfr = "/usr/lib/jvm/java-17-openjdk-amd64/bin/jfr";
  if (access(jfr, X_OK) != 0) return;
  FILE* pipe = popen(("timeout 60 " + std::string(jfr) +
                      " print --json --events jdk.ExecutionSample " + path + " 2>&1")
                         .c_str(),
                     "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[4096];
  size_t read = 0;
  while ((read = fread(buffer, 1, sizeof(buffer), pipe)) > 0) output.append(buffer, read);
  EXPECT_EQ(pclose(pipe), 0) << output.substr(0, 2000);
  EXPECT_NE(output.find("\"type\": \"Kernel\""), std::string::npos) << output.substr(0, 2000);
}

TEST(NativeNamesTest, KernelFalseLeavesThemOut) {
  const std::string path = TempJfr("nokernel");
  const std::string message = Profile(SyscallLoop, path, ",kernel=false");
  EXPECT_EQ(message.find("kernel frames"), std::string::npos) << message;
  int in_loop = 0, with_kernel = 0;
  for (const std::vector<JfrFrame>& frames : SamplesIn(path, "SyscallLoop")) {
    in_loop++;
    with_kernel += KernelFrames(frames) > 0;
  }
  printf("kernel=false: %d samples in SyscallLoop, %d with kernel frames\n", in_loop, with_kernel);
  EXPECT_GE(in_loop, 200);
  EXPECT_EQ(with_kernel, 0);
}

// A process without capabilities gets kernel frames only where the system lets anyone sample
// the kernel and read kallsyms addresses; otherwise the session samples without them and says
// why in its start message.
TEST(NativeNamesTest, WithoutPermissionTheSessionSamplesWithoutKernelFrames) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to drop capabilities in a child";
  std::ifstream paranoid_file("/proc/sys/kernel/perf_event_paranoid");
  std::ifstream kptr_file("/proc/sys/kernel/kptr_restrict");
  int paranoid = 2, kptr_restrict = 1;
  paranoid_file >> paranoid;
  kptr_file >> kptr_restrict;
  const bool expect_kernel = paranoid <= 1 && kptr_restrict == 0;
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[2] = {};
    if (syscall(SYS_capset, &header, data) != 0) _exit(10);
    char message[512] = {};
    if (ctxprof_start("event=cpu,interval=1ms", message, sizeof(message)) != 0) {
      fprintf(stderr, "child: start failed: %s\n", message);
      _exit(11);
    }
    SyscallLoop();
    if (ctxprof_stop() != 0) _exit(12);
    uint64_t samples = 0, kernel = 0;
    for (const AggregatedStack& stack : Profiler::Global()->Stacks()) {
      samples += stack.samples;
      for (const std::string& frame : stack.frames) {
        if (frame.size() > 4 && frame.compare(frame.size() - 4, 4, "_[k]") == 0) {
          kernel += stack.samples;
          break;
        }
      }
    }
    const bool noted = std::string(message).find("kernel frames off") != std::string::npos;
    fprintf(stderr,
            "child without capabilities: %lu samples, %lu with kernel frames, message \"%s\"\n",
            static_cast<unsigned long>(samples), static_cast<unsigned long>(kernel), message);
    if (samples < 100) _exit(13);
    if (expect_kernel ? (kernel == 0 || noted) : (kernel != 0 || !noted)) _exit(14);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "expected kernel frames: " << expect_kernel << " (perf_event_paranoid=" << paranoid
      << ", kptr_restrict=" << kptr_restrict << ")";
}

}  // namespace
}  // namespace ctxprof
