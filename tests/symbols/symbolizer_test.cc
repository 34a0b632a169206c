#include "profiler/symbols/symbolizer.h"

#include <dlfcn.h>
#include <elf.h>
#include <execinfo.h>
#include <gtest/gtest.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace {

// Not exported: only .symtab knows it.
__attribute__((noinline)) static int StaticHelperForSymbolizer(int x) { return x * 3 + 1; }

}  // namespace

namespace ctxprof {
namespace demo {
__attribute__((noinline)) int MangledFunction(double value) { return static_cast<int>(value); }
}  // namespace demo

namespace {

TEST(SymbolizerTest, ResolvesStaticFunctionsFromSymtab) {
  Symbolizer symbolizer;
  const auto address = reinterpret_cast<uint64_t>(&StaticHelperForSymbolizer);
  EXPECT_EQ(symbolizer.Resolve(address + 2, false),
            "(anonymous namespace)::StaticHelperForSymbolizer(int)");
  EXPECT_EQ(StaticHelperForSymbolizer(1), 4);
}

TEST(SymbolizerTest, DemanglesCppNames) {
  Symbolizer symbolizer;
  EXPECT_EQ(symbolizer.Resolve(reinterpret_cast<uint64_t>(&demo::MangledFunction), false),
            "ctxprof::demo::MangledFunction(double)");
  EXPECT_EQ(Symbolizer::Demangle("_ZN3Foo3barEi"), "Foo::bar(int)");
  EXPECT_EQ(Symbolizer::Demangle("plain_c_name"), "plain_c_name");
}

TEST(SymbolizerTest, ResolvesSharedLibraryFunctions) {
  Symbolizer symbolizer;
  EXPECT_EQ(symbolizer.Resolve(reinterpret_cast<uint64_t>(&getppid), false), "getppid");
}

TEST(SymbolizerTest, ReturnAddressLooksUpTheCall) {
  Symbolizer symbolizer;
  // The first byte of a function as a return address belongs to the previous function.
  const auto address = reinterpret_cast<uint64_t>(&demo::MangledFunction);
  EXPECT_NE(symbolizer.Resolve(address, true), "ctxprof::demo::MangledFunction(double)");
}

TEST(SymbolizerTest, UnmappedAddressIsUnknown) {
  Symbolizer symbolizer;
  EXPECT_EQ(symbolizer.Resolve(16, false), "[unknown]");
}

// The vDSO's functions, by their address as glibc's loader knows them (the vDSO is in its link
// map as linux-vdso.so.1).
TEST(SymbolizerTest, ResolvesVdsoFunctions) {
  void* vdso = dlopen("linux-vdso.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (vdso == nullptr) GTEST_SKIP() << "no vDSO in this process: " << dlerror();
  Symbolizer symbolizer;
  int named = 0;
  for (const char* function : {"__vdso_clock_gettime", "__vdso_gettimeofday", "__vdso_time"}) {
    const auto address = reinterpret_cast<uint64_t>(dlsym(vdso, function));
    if (address == 0) continue;  // not every architecture's vDSO has all three
    // Inside the function and as a return address into it: the global name, not its weak
    // alias (clock_gettime at the same address).
    EXPECT_EQ(symbolizer.Resolve(address + 4, false), function);
    EXPECT_EQ(symbolizer.Resolve(address + 5, true), function);
    EXPECT_EQ(symbolizer.ModuleName(address), "[vdso]");
    named++;
  }
  EXPECT_GE(named, 1);
  dlclose(vdso);
}

// Code in anonymous executable memory (a JIT's code cache) is "[jit]"; anonymous data that is
// not executable stays unknown.
TEST(SymbolizerTest, AnonymousExecutableMemoryIsJit) {
  const size_t size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* code = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(code, MAP_FAILED);
  static_cast<unsigned char*>(code)[0] = 0xc3;  // ret
  ASSERT_EQ(mprotect(code, size, PROT_READ | PROT_EXEC), 0);
  void* data = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(data, MAP_FAILED);
  Symbolizer symbolizer;
  EXPECT_EQ(symbolizer.Resolve(reinterpret_cast<uint64_t>(code), false), "[jit]");
  EXPECT_EQ(symbolizer.ModuleName(reinterpret_cast<uint64_t>(code)), "[jit]");
  EXPECT_EQ(symbolizer.Resolve(reinterpret_cast<uint64_t>(data) + 8, false), "[unknown]");
  munmap(code, size);
  munmap(data, size);
}

// Aliases at one address get one name whatever the order of the symbol table: the public
// (global) name, then the one with fewer leading underscores, then the shorter.
TEST(SymbolizerTest, BetterAliasPrefersThePublicShortName) {
  const int global = BindingRank(STB_GLOBAL), weak = BindingRank(STB_WEAK),
            local = BindingRank(STB_LOCAL);
  EXPECT_TRUE(BetterAlias("clock_nanosleep", global, "__GI___clock_nanosleep", local));
  EXPECT_TRUE(BetterAlias("__vdso_clock_gettime", global, "clock_gettime", weak));
  EXPECT_TRUE(BetterAlias("clone3", local, "__clone3", local));
  EXPECT_FALSE(BetterAlias("__clone3", local, "clone3", local));
  EXPECT_TRUE(BetterAlias("abc", local, "abd", local));
  EXPECT_FALSE(BetterAlias("abc", local, "abc", local));
}

std::string Runfile(const std::string& path) {
  return std::string(getenv("TEST_SRCDIR")) + "/ctxprof/" + path;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

void MakeFolders(const std::string& path) {
  for (size_t slash = path.find('/', 1); slash != std::string::npos;
       slash = path.find('/', slash + 1)) {
    mkdir(path.substr(0, slash).c_str(), 0700);
  }
  mkdir(path.c_str(), 0700);
}

// A stripped copy of a library in a fresh folder, loaded, with the address of its static
// function (known to the library itself).
struct LoadedPlugin {
  void* handle = nullptr;
  uint64_t helper = 0;
};

LoadedPlugin LoadPlugin(const std::string& path) {
  LoadedPlugin plugin;
  plugin.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (plugin.handle == nullptr) {
    ADD_FAILURE() << dlerror();
    return plugin;
  }
  auto address =
      reinterpret_cast<const void* (*)()>(dlsym(plugin.handle, "NamedPluginHelperAddress"));
  if (address == nullptr) {
    ADD_FAILURE() << "NamedPluginHelperAddress missing";
    return plugin;
  }
  plugin.helper = reinterpret_cast<uint64_t>(address());
  return plugin;
}

std::string BuildIdHex(const std::string& elf_path) {
  // Independent of the code under test: readelf's note dump.
  std::string command = "readelf -n " + elf_path + " | sed -n 's/.*Build ID: //p'";
  FILE* pipe = popen(command.c_str(), "r");
  char line[128] = {};
  const bool read = pipe != nullptr && fgets(line, sizeof(line), pipe) != nullptr;
  if (pipe != nullptr) pclose(pipe);
  std::string hex = read ? line : "";
  while (!hex.empty() && (hex.back() == '\n' || hex.back() == ' ')) hex.pop_back();
  return hex;
}

class DebugFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char folder[] = "/tmp/ctxprof_debugfiles_XXXXXX";
    ASSERT_NE(mkdtemp(folder), nullptr);
    folder_ = folder;
    debug_ = ReadAll(Runfile("tests/symbols/stripped/libnamed_plugin.debug"));
    ASSERT_FALSE(debug_.empty());
  }
  void TearDown() override { system(("rm -rf " + folder_).c_str()); }

  std::string folder_;
  std::string debug_;
};

// Found by build id under the debug root (as Debian's -dbg packages install them); without it
// the function has no name.
TEST_F(DebugFileTest, ByBuildId) {
  const std::string library = folder_ + "/lib/libnamed_plugin.so";
  MakeFolders(folder_ + "/lib");
  WriteAll(library, ReadAll(Runfile("tests/symbols/stripped/libnamed_plugin.so")));
  const std::string id = BuildIdHex(library);
  ASSERT_GT(id.size(), 2u) << "the library has no build id";
  MakeFolders(folder_ + "/root/.build-id/" + id.substr(0, 2));
  WriteAll(folder_ + "/root/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug", debug_);
  const LoadedPlugin plugin = LoadPlugin(library);
  ASSERT_NE(plugin.helper, 0u);

  Symbolizer with_debug_files(folder_ + "/root");
  EXPECT_EQ(with_debug_files.Resolve(plugin.helper + 1, false), "HiddenHelperForDebugFiles(int)");
  // Without it the function has no name, but one: its start's offset, wherever in it the
  // address is (the unwind table's function starts), and not the next function's.
  Symbolizer without(folder_ + "/nothing");
  const std::string unnamed = without.Resolve(plugin.helper + 1, false);
  EXPECT_EQ(unnamed.rfind("[libnamed_plugin.so+0x", 0), 0u) << unnamed;
  EXPECT_EQ(without.Resolve(plugin.helper, false), unnamed);
  EXPECT_EQ(without.Resolve(plugin.helper + 9, true), unnamed);
  const auto call = reinterpret_cast<uint64_t>(dlsym(plugin.handle, "NamedPluginCall"));
  EXPECT_EQ(without.Resolve(call + 1, false), "NamedPluginCall");
  dlclose(plugin.handle);
}

// Found through .gnu_debuglink in .debug/ beside the library, which has no build id: accepted by
// the CRC-32 of its contents; a debug file whose CRC does not match is not used.
TEST_F(DebugFileTest, ByDebugLinkAndCrc) {
  const std::string library = folder_ + "/lib/libnamed_plugin_nobuildid.so";
  MakeFolders(folder_ + "/lib/.debug");
  WriteAll(library, ReadAll(Runfile("tests/symbols/stripped/libnamed_plugin_nobuildid.so")));
  ASSERT_EQ(BuildIdHex(library), "");
  WriteAll(folder_ + "/lib/.debug/libnamed_plugin.debug", debug_);
  const LoadedPlugin plugin = LoadPlugin(library);
  ASSERT_NE(plugin.helper, 0u);
  Symbolizer symbolizer(folder_ + "/nothing");
  EXPECT_EQ(symbolizer.Resolve(plugin.helper + 1, false), "HiddenHelperForDebugFiles(int)");

  std::string corrupt = debug_;
  corrupt[corrupt.size() / 2] ^= 0x5a;
  WriteAll(folder_ + "/lib/.debug/libnamed_plugin.debug", corrupt);
  Symbolizer stale(folder_ + "/nothing");
  EXPECT_EQ(stale.Resolve(plugin.helper + 1, false).rfind("[libnamed_plugin_nobuildid.so+0x", 0),
            0u)
      << stale.Resolve(plugin.helper + 1, false);
  dlclose(plugin.handle);
}

// The vDSO's static functions are named where a debug file of the kernel's vDSO is installed,
// found by the build id of the image in memory. The debug file here is the image itself with a
// symbol added by objcopy one byte into __vdso_clock_gettime (a symbol without a size covers
// up to the next one), so that only the debug file can name that address so.
TEST_F(DebugFileTest, VdsoByBuildId) {
  void* vdso = dlopen("linux-vdso.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (vdso == nullptr) GTEST_SKIP() << "no vDSO in this process: " << dlerror();
  const auto function = reinterpret_cast<uint64_t>(dlsym(vdso, "__vdso_clock_gettime"));
  dlclose(vdso);
  if (function == 0) GTEST_SKIP() << "this vDSO has no __vdso_clock_gettime";
  std::ifstream maps("/proc/self/maps");
  std::string line;
  uint64_t start = 0, end = 0;
  while (std::getline(maps, line)) {
    if (line.find("[vdso]") == std::string::npos) continue;
    sscanf(line.c_str(), "%lx-%lx", &start, &end);
  }
  ASSERT_NE(start, 0u);
  const std::string image = folder_ + "/vdso.so";
  WriteAll(image, std::string(reinterpret_cast<const char*>(start), end - start));
  const std::string id = BuildIdHex(image);
  if (id.size() <= 2) GTEST_SKIP() << "this vDSO has no build id";
  // The function's virtual address in the image, from its own symbol table.
  FILE* pipe = popen(
      ("readelf -sW " + image + " | awk '$8 ~ /^__vdso_clock_gettime/ {print $2; exit}'").c_str(),
      "r");
  char value[64] = {};
  ASSERT_NE(fgets(value, sizeof(value), pipe), nullptr);
  pclose(pipe);
  char symbol[128];
  snprintf(symbol, sizeof(symbol), "ctxprof_vdso_probe=0x%lx,global,function",
           strtoul(value, nullptr, 16) + 1);
  MakeFolders(folder_ + "/root/.build-id/" + id.substr(0, 2));
  const std::string debug =
      folder_ + "/root/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + ".debug";
  ASSERT_EQ(
      system(("objcopy --add-symbol " + std::string(symbol) + " " + image + " " + debug).c_str()),
      0);

  Symbolizer with_debug_file(folder_ + "/root");
  EXPECT_EQ(with_debug_file.Resolve(function + 2, false), "ctxprof_vdso_probe");
  EXPECT_EQ(with_debug_file.Resolve(function, false), "__vdso_clock_gettime");
  Symbolizer without(folder_ + "/nothing");
  EXPECT_EQ(without.Resolve(function + 2, false), "__vdso_clock_gettime");
}

// The root frame of a thread started by pthread_create is glibc's clone3, which only libc's
// .symtab names; Debian strips it into libc6-dbg's debug file. Where that is not installed this
// test skips.
TEST(SymbolizerTest, ThreadRootFromLibcDebugFile) {
  Dl_info info;
  ASSERT_NE(dladdr(reinterpret_cast<void*>(&getppid), &info), 0);
  const std::string id = BuildIdHex(info.dli_fname);
  const std::string debug_file = std::string("/usr/lib/debug/.build-id/") + id.substr(0, 2) + "/" +
                                 id.substr(id.size() > 2 ? 2 : 0) + ".debug";
  if (id.size() <= 2 || access(debug_file.c_str(), R_OK) != 0) {
    GTEST_SKIP() << "no debug file for " << info.dli_fname << " (" << debug_file
                 << "); install libc6-dbg to run this test";
  }
  // glibc's backtrace() walks the thread to its root with the compiler's unwinder.
  void* frames[64];
  int count = 0;
  std::thread([&] { count = backtrace(frames, 64); }).join();
  ASSERT_GE(count, 2);
  const auto root = reinterpret_cast<uint64_t>(frames[count - 1]);
  const auto above = reinterpret_cast<uint64_t>(frames[count - 2]);
  Symbolizer symbolizer;
  EXPECT_EQ(symbolizer.Resolve(root, true), "clone3");
  EXPECT_EQ(symbolizer.Resolve(above, true), "start_thread");
  Symbolizer without("/nonexistent");
  EXPECT_EQ(without.Resolve(root, true).rfind("[libc.so.6+0x", 0), 0u)
      << without.Resolve(root, true);
}

}  // namespace
}  // namespace ctxprof

namespace ctxprof {
namespace {

// kallsyms text: text symbols only (t, T, w, W), aliases resolved, a module's column dropped,
// zero addresses (what an unprivileged reader sees) skipped.
TEST(KernelSymbolsTest, ReadsTextSymbolsOfAKallsymsFile) {
  char path[] = "/tmp/ctxprof_kallsyms_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  WriteAll(path,
           "ffffffff81000000 T _stext\n"
           "ffffffff81000000 T _text\n"
           "ffffffff81000000 t srso_alias_untrain_ret\n"
           "ffffffff81000100 T entry_SYSCALL_64\n"
           "ffffffff81001000 D some_data\n"
           "ffffffff81002000 t __do_sys_getppid\n"
           "ffffffff81002000 T __x64_sys_getppid\n"
           "ffffffff81003000 W weak_function\n"
           "0000000000000000 T hidden_by_kptr_restrict\n"
           "ffffffffc0001000 t ext4_module_function\t[ext4]\n");
  const std::unique_ptr<KernelSymbols> symbols = KernelSymbols::Load(path);
  unlink(path);
  EXPECT_EQ(symbols->size(), 5u);
  EXPECT_EQ(symbols->Resolve(0xffffffff80ffffffull), "[kernel]");
  EXPECT_EQ(symbols->Resolve(0xffffffff81000010ull), "_text");
  EXPECT_EQ(symbols->Resolve(0xffffffff81000180ull), "entry_SYSCALL_64");
  EXPECT_EQ(symbols->Resolve(0xffffffff81001004ull), "entry_SYSCALL_64");  // data is not code
  EXPECT_EQ(symbols->Resolve(0xffffffff81002010ull), "__x64_sys_getppid");
  EXPECT_EQ(symbols->Resolve(0xffffffff81003000ull), "weak_function");
  EXPECT_EQ(symbols->Resolve(0xffffffffc0001234ull), "ext4_module_function");
  EXPECT_EQ(KernelSymbols::Load("/nonexistent/kallsyms")->size(), 0u);
}

// The process's table: the running kernel's, when /proc/kallsyms shows addresses (it hides them
// from an unprivileged reader when kptr_restrict is set; then there is nothing to check).
TEST(KernelSymbolsTest, NamesThisKernelsSyscallEntry) {
  const Status visible = KernelSymbols::CheckAddressesVisible();
  if (!visible.ok()) GTEST_SKIP() << visible.message();
  const std::shared_ptr<const KernelSymbols> symbols = KernelSymbols::Shared();
  EXPECT_GT(symbols->size(), 1000u);
  EXPECT_EQ(KernelSymbols::Shared().get(), symbols.get()) << "one table while it is held";
  // The symbol's own address, from the file, resolves to it.
  std::ifstream kallsyms("/proc/kallsyms");
  std::string line;
  uint64_t address = 0;
  while (std::getline(kallsyms, line)) {
    if (line.find(" T do_syscall_64") != std::string::npos ||
        line.find(" T el0_svc") != std::string::npos) {
      address = strtoull(line.c_str(), nullptr, 16);
      break;
    }
  }
  if (address == 0) GTEST_SKIP() << "no do_syscall_64 (x86-64) or el0_svc (arm64) here";
  const std::string name = symbols->Resolve(address + 1);
  EXPECT_TRUE(name == "do_syscall_64" || name == "el0_svc") << name;
  Symbolizer symbolizer;
  EXPECT_EQ(symbolizer.ResolveKernel(address + 2, true), name);
}

}  // namespace
}  // namespace ctxprof
