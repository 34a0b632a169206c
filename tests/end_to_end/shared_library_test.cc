// libctxprof.so as a host would use it: loaded with dlopen (as the JVM loads an agent, so our
// initial-exec TLS must come from the static TLS surplus), driven only through the exported C
// API, and exporting nothing but ctxprof_* symbols.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <link.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "tests/support/session_test_util.h"

namespace {

std::string LibraryPath() {
  return std::string(getenv("TEST_SRCDIR")) + "/ctxprof/jni/libctxprof.so";
}

template <typename F>
F Symbol(void* library, const char* name) {
  void* symbol = dlsym(library, name);
  EXPECT_NE(symbol, nullptr) << name << ": " << dlerror();
  return reinterpret_cast<F>(symbol);
}

std::atomic<uint64_t> g_sink{0};

TEST(SharedLibraryTest, DlopenStartDumpStop) {
  void* library = dlopen(LibraryPath().c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << dlerror();
  auto start = Symbol<int (*)(const char*, char*, size_t)>(library, "ctxprof_start");
  auto stop = Symbol<int (*)()>(library, "ctxprof_stop");
  auto dump = Symbol<int (*)(const char*)>(library, "ctxprof_dump");
  auto set_trace =
      Symbol<void (*)(uint64_t, uint64_t, uint64_t)>(library, "ctxprof_set_trace_context");
  ASSERT_NE(start, nullptr);
  char error[512];
  ASSERT_EQ(start("event=cpu+wall,interval=5ms,wall=5ms", error, sizeof(error)), 0) << error;
  set_trace(7, 8, 9);
  const uint64_t end = ctxprof::testing::ThreadCpuNanos() + 300 * 1000 * 1000;
  uint64_t value = 1;
  while (ctxprof::testing::ThreadCpuNanos() < end) value = ctxprof::testing::Spin(100000, value);
  g_sink += value;
  ASSERT_EQ(stop(), 0);
  const std::string path = std::string(getenv("TEST_TMPDIR")) + "/dlopen.collapsed";
  ASSERT_EQ(dump(path.c_str()), 0);
  std::ifstream in(path);
  std::string line;
  int with_context = 0;
  while (std::getline(in, line)) {
    if (line.find("[trace=00000000000000070000000000000008];[span=0000000000000009]") !=
        std::string::npos) {
      ++with_context;
    }
  }
  EXPECT_GT(with_context, 0);
}

// Every global symbol the library defines is part of the C API, a JVM entry point or the
// OpenTelemetry thread context pointer (OTEP 4947, tests/otel).
TEST(SharedLibraryTest, ExportsOnlyEntryPoints) {
  void* library = dlopen(LibraryPath().c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << dlerror();
  link_map* map = nullptr;
  ASSERT_EQ(dlinfo(library, RTLD_DI_LINKMAP, &map), 0);
  const ElfW(Sym)* symbols = nullptr;
  const char* names = nullptr;
  const ElfW(Word)* gnu_hash = nullptr;
  for (const ElfW(Dyn)* d = map->l_ld; d->d_tag != DT_NULL; ++d) {
    if (d->d_tag == DT_SYMTAB) symbols = reinterpret_cast<const ElfW(Sym)*>(d->d_un.d_ptr);
    if (d->d_tag == DT_STRTAB) names = reinterpret_cast<const char*>(d->d_un.d_ptr);
    if (d->d_tag == DT_GNU_HASH) gnu_hash = reinterpret_cast<const ElfW(Word)*>(d->d_un.d_ptr);
  }
  ASSERT_NE(symbols, nullptr);
  ASSERT_NE(gnu_hash, nullptr);
  // The symbol count from the GNU hash table: the highest chain end.
  const ElfW(Word) buckets = gnu_hash[0], first = gnu_hash[1], bloom = gnu_hash[2];
  const ElfW(Word)* bucket = gnu_hash + 4 + bloom * (sizeof(ElfW(Addr)) / 4);
  const ElfW(Word)* chain = bucket + buckets;
  ElfW(Word) count = first;
  for (ElfW(Word) b = 0; b < buckets; ++b) count = bucket[b] >= count ? bucket[b] + 1 : count;
  while (count > first && (chain[count - 1 - first] & 1) == 0) ++count;
  int c_api = 0;
  for (ElfW(Word) i = 1; i < count; ++i) {
    const ElfW(Sym)& symbol = symbols[i];
    if (symbol.st_shndx == SHN_UNDEF || ELF64_ST_BIND(symbol.st_info) == STB_LOCAL) continue;
    const std::string name = names + symbol.st_name;
    if (name.rfind("ctxprof_", 0) == 0) {
      ++c_api;
      continue;
    }
    if (name == "otel_thread_ctx_v1") {
      EXPECT_EQ(ELF64_ST_TYPE(symbol.st_info), STT_TLS);
      EXPECT_EQ(symbol.st_size, 8u);
      continue;
    }
    // Besides the C API, only JVM entry points: JNI methods of io.ctxprof and agent hooks.
    const bool jvm_entry = name.rfind("Java_io_ctxprof_", 0) == 0 || name.rfind("JNI_On", 0) == 0 ||
                           name.rfind("Agent_On", 0) == 0;
    EXPECT_TRUE(jvm_entry) << "unexpected export: " << name;
  }
  EXPECT_EQ(c_api, 9);  // the functions of profiler/ctxprof.h
}

}  // namespace
