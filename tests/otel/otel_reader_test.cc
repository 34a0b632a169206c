// An OpenTelemetry context reader written from OTEP 4947 (thread context) and OTEP 4719 (process
// context) alone, reading ANOTHER process while it runs: the workloads (otel_c_workload through
// the C API; OtelWorkload through the Java API's fast path, ContextSetter and a virtual thread,
// on each installed JDK) print the contexts their threads set, and this test finds them in the
// workload's memory the way an external profiler does:
//   * process context: the mapping named OTEL_CTX in /proc/PID/maps, its 32-byte header, the
//     protobuf payload read between two reads of the timestamp;
//   * thread context: otel_thread_ctx_v1 in libctxprof.so's .dynsym (STT_TLS, 8 bytes), its
//     R_X86_64_TLSDESC GOT slot, the thread's fs base from PTRACE_GETREGS while the thread is
//     ptrace-stopped, then the static-TLS offset or the DTV walk, the pointer, the record.
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

// ---- Reading the target's memory -------------------------------------------------------------

bool ReadMemory(pid_t pid, uint64_t address, void* out, size_t bytes) {
  iovec local{out, bytes};
  iovec remote{reinterpret_cast<void*>(address), bytes};
  return process_vm_readv(pid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(bytes);
}

template <typename T>
bool Read(pid_t pid, uint64_t address, T* out) {
  return ReadMemory(pid, address, out, sizeof(T));
}

struct Mapping {
  uint64_t start, end, offset;
  std::string perms, name;
};

std::vector<Mapping> Maps(pid_t pid) {
  std::vector<Mapping> maps;
  std::ifstream in("/proc/" + std::to_string(pid) + "/maps");
  std::string line;
  while (std::getline(in, line)) {
    Mapping m;
    char perms[8] = {};
    unsigned long long start, end, offset;
    int name_at = 0;
    if (sscanf(line.c_str(), "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &offset,
               &name_at) < 4) {
      continue;
    }
    m.start = start;
    m.end = end;
    m.offset = offset;
    m.perms = perms;
    m.name = name_at > 0 ? line.substr(static_cast<size_t>(name_at)) : "";
    maps.push_back(m);
  }
  return maps;
}

// ---- Protobuf (wire types 0 and 2 only: all ProcessContext uses) -------------------------------

struct Field {
  uint32_t number;
  uint64_t varint;
  std::string bytes;
};

bool ParseFields(const std::string& data, std::vector<Field>* out) {
  size_t i = 0;
  auto varint = [&](uint64_t* value) {
    *value = 0;
    for (int shift = 0; i < data.size() && shift < 64; shift += 7) {
      const uint8_t byte = static_cast<uint8_t>(data[i++]);
      *value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if (byte < 0x80) return true;
    }
    return false;
  };
  while (i < data.size()) {
    uint64_t key, value;
    if (!varint(&key)) return false;
    Field field{static_cast<uint32_t>(key >> 3), 0, {}};
    if ((key & 7) == 0) {
      if (!varint(&field.varint)) return false;
    } else if ((key & 7) == 2) {
      if (!varint(&value) || value > data.size() - i) return false;
      field.bytes = data.substr(i, value);
      i += value;
    } else {
      return false;
    }
    out->push_back(field);
  }
  return true;
}

// KeyValue{1: key, 2: AnyValue{1: string_value, 5: array_value{1: AnyValue}}}, flattened: a
// string value as itself, an array of strings as its elements.
bool ParseKeyValue(const std::string& data, std::string* key, std::vector<std::string>* values) {
  std::vector<Field> fields, any;
  if (!ParseFields(data, &fields)) return false;
  for (const Field& f : fields) {
    if (f.number == 1) *key = f.bytes;
    if (f.number == 2 && ParseFields(f.bytes, &any)) {
      for (const Field& a : any) {
        if (a.number == 1) values->push_back(a.bytes);
        std::vector<Field> array, element;
        if (a.number != 5 || !ParseFields(a.bytes, &array)) continue;
        for (const Field& e : array) {
          element.clear();
          if (e.number == 1 && ParseFields(e.bytes, &element)) {
            for (const Field& s : element) {
              if (s.number == 1) values->push_back(s.bytes);
            }
          }
        }
      }
    }
  }
  return true;
}

// ---- OTEP 4719: the process context -------------------------------------------------------------

struct ProcessContextView {
  std::map<std::string, std::string> resource;
  std::map<std::string, std::vector<std::string>> attributes;
};

bool ReadProcessContext(pid_t pid, ProcessContextView* out, std::string* why) {
  uint64_t address = 0;
  for (const Mapping& m : Maps(pid)) {
    const bool named = m.name.rfind("[anon_shmem:OTEL_CTX]", 0) == 0 ||
                       m.name.rfind("[anon:OTEL_CTX]", 0) == 0 ||
                       m.name.rfind("/memfd:OTEL_CTX", 0) == 0;
    if (named && m.perms.find('x') == std::string::npos) address = m.start;
  }
  if (address == 0) {
    *why = "no OTEL_CTX mapping";
    return false;
  }
  struct Header {
    char signature[8];
    uint32_t version, payload_size;
    uint64_t published_at_ns, payload;
  } header;
  for (int attempt = 0; attempt < 10; attempt++) {
    if (!Read(pid, address, &header)) {
      *why = "cannot read the header";
      return false;
    }
    if (memcmp(header.signature, "OTEL_CTX", 8) != 0 || header.version != 2) {
      *why = "bad signature or version";
      return false;
    }
    if (header.published_at_ns == 0) continue;  // being written
    std::string payload(header.payload_size, '\0');
    uint64_t again = 0;
    if (!ReadMemory(pid, header.payload, &payload[0], payload.size()) ||
        !Read(pid, address + 16, &again)) {
      *why = "cannot read the payload";
      return false;
    }
    if (again != header.published_at_ns) continue;  // updated while we copied
    std::vector<Field> fields;
    if (!ParseFields(payload, &fields)) {
      *why = "payload is not protobuf";
      return false;
    }
    for (const Field& f : fields) {
      std::vector<Field> resource;
      if (f.number == 1 && ParseFields(f.bytes, &resource)) {
        for (const Field& r : resource) {
          std::string key;
          std::vector<std::string> values;
          if (r.number == 1 && ParseKeyValue(r.bytes, &key, &values) && values.size() == 1) {
            out->resource[key] = values[0];
          }
        }
      }
      std::string key;
      std::vector<std::string> values;
      if (f.number == 2 && ParseKeyValue(f.bytes, &key, &values)) out->attributes[key] = values;
    }
    return true;
  }
  *why = "the context kept changing";
  return false;
}

// ---- OTEP 4947: the TLS variable and a thread's record ------------------------------------------

struct TlsSlot {
  uint64_t descriptor = 0;  // address of the TLSDESC GOT slot in the target
};

// Finds otel_thread_ctx_v1 in `path` (.dynsym) and its TLSDESC relocation; the slot's address is
// relative to the library's load base `base`.
bool FindTlsDescriptor(const std::string& path, uint64_t base, TlsSlot* slot, std::string* why) {
  std::ifstream file(path, std::ios::binary);
  std::string elf((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (elf.size() < sizeof(Elf64_Ehdr) || memcmp(elf.data(), ELFMAG, SELFMAG) != 0) {
    *why = path + " is not an ELF file";
    return false;
  }
  const auto* header = reinterpret_cast<const Elf64_Ehdr*>(elf.data());
  const auto* sections = reinterpret_cast<const Elf64_Shdr*>(elf.data() + header->e_shoff);
  int dynsym = -1;
  for (int i = 0; i < header->e_shnum; i++) {
    if (sections[i].sh_type == SHT_DYNSYM) dynsym = i;
  }
  if (dynsym < 0) {
    *why = "no .dynsym";
    return false;
  }
  const auto* symbols = reinterpret_cast<const Elf64_Sym*>(elf.data() + sections[dynsym].sh_offset);
  const char* names = elf.data() + sections[sections[dynsym].sh_link].sh_offset;
  const size_t count = sections[dynsym].sh_size / sizeof(Elf64_Sym);
  size_t index = 0;
  for (size_t i = 1; i < count; i++) {
    if (strcmp(names + symbols[i].st_name, "otel_thread_ctx_v1") == 0) index = i;
  }
  if (index == 0) {
    *why = "otel_thread_ctx_v1 is not in .dynsym";
    return false;
  }
  const Elf64_Sym& symbol = symbols[index];
  if (ELF64_ST_TYPE(symbol.st_info) != STT_TLS || symbol.st_size != 8 ||
      ELF64_ST_BIND(symbol.st_info) != STB_GLOBAL ||
      ELF64_ST_VISIBILITY(symbol.st_other) != STV_DEFAULT) {
    *why = "otel_thread_ctx_v1 is not a global, default-visibility, 8-byte STT_TLS symbol";
    return false;
  }
  for (int i = 0; i < header->e_shnum; i++) {
    if (sections[i].sh_type != SHT_RELA || sections[i].sh_link != static_cast<unsigned>(dynsym)) {
      continue;
    }
    const auto* relocations =
        reinterpret_cast<const Elf64_Rela*>(elf.data() + sections[i].sh_offset);
    for (size_t r = 0; r < sections[i].sh_size / sizeof(Elf64_Rela); r++) {
      if (ELF64_R_SYM(relocations[r].r_info) != index) continue;
      if (ELF64_R_TYPE(relocations[r].r_info) != R_X86_64_TLSDESC) {
        *why = "otel_thread_ctx_v1 has relocation type " +
               std::to_string(ELF64_R_TYPE(relocations[r].r_info)) + ", not R_X86_64_TLSDESC";
        return false;
      }
      slot->descriptor = base + relocations[r].r_offset;
      return true;
    }
  }
  *why = "no relocation references otel_thread_ctx_v1";
  return false;
}

struct ThreadView {
  bool present = false;      // pointer non-null and valid == 1
  bool dynamic_tls = false;  // found through the DTV (the OTEP's reader must support it)
  std::string trace, span;
  std::map<int, std::string> attributes;  // key index -> value (last one wins)
};

std::string Hex(const uint8_t* bytes, size_t size) {
  std::string text;
  char digits[3];
  for (size_t i = 0; i < size; i++) {
    snprintf(digits, sizeof(digits), "%02x", bytes[i]);
    text += digits;
  }
  return text;
}

// Stops `tid` with PTRACE_SEIZE + PTRACE_INTERRUPT (the OTEP: read only a stopped thread), reads
// its record and lets it go.
bool ReadThread(pid_t pid, pid_t tid, const TlsSlot& slot, ThreadView* out, std::string* why) {
  if (ptrace(PTRACE_SEIZE, tid, nullptr, nullptr) != 0) {
    *why = std::string("PTRACE_SEIZE: ") + strerror(errno);
    return false;
  }
  bool ok = false;
  int status = 0;
  user_regs_struct regs;
  if (ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) != 0) {
    *why = std::string("PTRACE_INTERRUPT: ") + strerror(errno);
  } else if (waitpid(tid, &status, __WALL) != tid) {
    *why = std::string("waitpid: ") + strerror(errno);
  } else if (ptrace(PTRACE_GETREGS, tid, nullptr, &regs) != 0) {
    *why = std::string("PTRACE_GETREGS: ") + strerror(errno);
  } else {
    ok = true;
    const uint64_t tp = regs.fs_base;
    uint64_t descriptor[2] = {};  // {resolver, argument}
    uint64_t variable = 0;
    if (!ReadMemory(pid, slot.descriptor, descriptor, sizeof(descriptor))) {
      *why = "cannot read the TLS descriptor";
      ok = false;
    } else if (static_cast<int64_t>(descriptor[1]) > 0xffffffffLL) {
      // Dynamic TLS: the argument points at {module id, offset}; glibc's DTV has 16-byte entries
      // and its address at tp + 8.
      out->dynamic_tls = true;
      uint64_t index[2], dtv = 0, block = 0;
      if (Read(pid, descriptor[1], &index) && Read(pid, tp + 8, &dtv) &&
          Read(pid, dtv + 16 * index[0], &block) && block != 0 && block != ~0ull) {
        variable = block + index[1];
      }
    } else {
      variable = tp + descriptor[1];  // static TLS: an offset from the thread pointer
    }
    uint64_t pointer = 0;
    uint8_t header[28];
    if (ok && variable != 0 && Read(pid, variable, &pointer) && pointer != 0) {
      if (!ReadMemory(pid, pointer, header, sizeof(header))) {
        *why = "the pointer does not point at readable memory";
        ok = false;
      } else if (header[24] == 1) {
        out->present = true;
        out->trace = Hex(header, 16);
        out->span = Hex(header + 16, 8);
        uint16_t size;
        memcpy(&size, header + 26, 2);
        std::vector<uint8_t> data(size);
        if (!ReadMemory(pid, pointer + 28, data.data(), size)) {
          *why = "cannot read attrs-data";
          ok = false;
        }
        for (size_t i = 0; ok && i + 2 <= data.size();) {
          const size_t length = data[i + 1];
          if (i + 2 + length > data.size()) break;  // a partial entry ends the list
          out->attributes[data[i]] =
              std::string(reinterpret_cast<const char*>(data.data()) + i + 2, length);
          i += 2 + length;
        }
      }
    }
  }
  ptrace(PTRACE_DETACH, tid, nullptr, nullptr);
  return ok;
}

// ---- The workload -----------------------------------------------------------------------------

struct Workload {
  pid_t pid = -1;
  FILE* out = nullptr;  // its stdout
  int in = -1;          // its stdin
};

Workload Spawn(const std::vector<std::string>& command, const std::string& preload) {
  int to_child[2], from_child[2];
  if (pipe(to_child) != 0 || pipe(from_child) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(to_child[0], 0);
    dup2(from_child[1], 1);
    close(to_child[1]);
    close(from_child[0]);
    setenv("OTEL_SERVICE_NAME", "otel-reader-test", 1);
    if (!preload.empty()) setenv("LD_PRELOAD", preload.c_str(), 1);
    std::vector<char*> argv;
    for (const std::string& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(to_child[0]);
  close(from_child[1]);
  return Workload{pid, fdopen(from_child[0], "r"), to_child[1]};
}

// Reads one round: the "ctx" lines up to "ready" (and the "foreign" ones into *foreign). False
// on EOF.
bool ReadRound(FILE* out, std::vector<std::string>* lines, std::vector<std::string>* foreign) {
  char buffer[4096];
  while (fgets(buffer, sizeof(buffer), out) != nullptr) {
    std::string line(buffer);
    if (!line.empty() && line.back() == '\n') line.pop_back();
    if (line == "ready") return true;
    if (line.rfind("ctx ", 0) == 0) lines->push_back(line);
    if (line.rfind("foreign ", 0) == 0) foreign->push_back(line);
  }
  return false;
}

std::string TestFile(const char* path) {
  return std::string(getenv("TEST_SRCDIR")) + "/ctxprof/" + path;
}

// Checks every thread the workload reported, over two rounds; `threads` = lines per round.
// Runs `command` and waits for it; its exit status.
int Run(const std::vector<std::string>& command) {
  const pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> argv;
    for (const std::string& arg : command) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// `preload`: a library for LD_PRELOAD that exports its own otel_thread_ctx_v1; then each thread
// also reports that variable, which must stay null (our writes are ours). `attach`: the workload
// starts no session; after round 0 (then nothing may be published) `ctxprof attach` starts one
// with otelcontext=true, and round 1 is checked.
void CheckWorkload(const std::vector<std::string>& command, size_t threads,
                   const std::string& preload = "", bool attach = false) {
  Workload workload = Spawn(command, preload);
  ASSERT_GT(workload.pid, 0);
  for (int round = 0; round < 2; round++) {
    std::vector<std::string> lines, foreign;
    ASSERT_TRUE(ReadRound(workload.out, &lines, &foreign))
        << "the workload ended before round " << round;
    ASSERT_EQ(lines.size(), threads);
    ASSERT_EQ(foreign.size(), preload.empty() ? 0 : threads);
    for (const std::string& line : foreign) {
      EXPECT_EQ(line.substr(line.rfind(' ') + 1), "0") << line << ": our write went elsewhere";
    }

    ProcessContextView process;
    std::string why;
    if (attach && round == 0) {
      EXPECT_FALSE(ReadProcessContext(workload.pid, &process, &why)) << "published before attach";
      const std::string recording = std::string(getenv("TEST_TMPDIR")) + "/attach.jfr";
      ASSERT_EQ(Run({TestFile("tools/ctxprof"), "attach", std::to_string(workload.pid), "start",
                     "--lib", TestFile("jni/libctxprof.so"), "--event", "ctimer", "--interval",
                     "100ms", "--otelcontext", "true", "-o", recording}),
                0);
      ASSERT_EQ(write(workload.in, "next\n", 5), 5);
      continue;
    }
    ASSERT_TRUE(ReadProcessContext(workload.pid, &process, &why)) << why;
    EXPECT_EQ(process.resource["service.name"], "otel-reader-test");
    EXPECT_EQ(process.resource["process.pid"], std::to_string(workload.pid));
    ASSERT_EQ(process.attributes["threadlocal.schema_version"],
              std::vector<std::string>{"tlsdesc_v1_dev"});
    const std::vector<std::string> key_map = process.attributes["threadlocal.attribute_key_map"];
    ASSERT_EQ(key_map, (std::vector<std::string>{"http.route", "tenant"}));

    TlsSlot slot;
    bool found = false;
    for (const Mapping& m : Maps(workload.pid)) {
      if (m.offset == 0 && m.name.find("libctxprof.so") != std::string::npos) {
        ASSERT_TRUE(FindTlsDescriptor(m.name, m.start, &slot, &why)) << why;
        found = true;
        break;
      }
    }
    ASSERT_TRUE(found) << "libctxprof.so is not mapped in the workload";

    for (const std::string& line : lines) {
      std::istringstream fields(line);
      std::string word, trace, span, attributes;
      pid_t tid = 0;
      fields >> word >> tid >> trace >> span >> attributes;
      ThreadView view;
      ASSERT_TRUE(ReadThread(workload.pid, tid, slot, &view, &why)) << line << ": " << why;
      // libctxprof.so also has initial-exec TLS (its tid and log caches), so glibc always
      // gives its module static TLS, even with glibc.rtld.optional_static_tls=0: the TLSDESC
      // descriptor resolves to an offset from the thread pointer.
      EXPECT_FALSE(view.dynamic_tls) << line;
      if (trace == "none") {
        EXPECT_FALSE(view.present) << line << ": a record is published for an empty context";
        continue;
      }
      ASSERT_TRUE(view.present) << line << ": no valid record";
      EXPECT_EQ(view.trace, trace) << line;
      EXPECT_EQ(view.span, span) << line;
      std::string seen;
      for (const auto& [key, value] : view.attributes) {
        ASSERT_LT(static_cast<size_t>(key), key_map.size()) << line;
        seen += (seen.empty() ? "" : ";") + key_map[key] + "=" + value;
      }
      EXPECT_EQ(seen, attributes) << line;
    }
    const char* next = round == 0 ? "next\n" : "quit\n";
    ASSERT_EQ(write(workload.in, next, strlen(next)), static_cast<ssize_t>(strlen(next)));
  }
  close(workload.in);
  fclose(workload.out);
  int status = 0;
  ASSERT_EQ(waitpid(workload.pid, &status, 0), workload.pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

TEST(OtelReaderTest, CApiThreads) {
  CheckWorkload({TestFile("tests/otel/otel_c_workload"), TestFile("jni/libctxprof.so")}, 3);
}

// Another publisher first in the global scope: libctxprof.so (linked -Bsymbolic) still writes its
// own otel_thread_ctx_v1, and readers find our records through our relocation.
TEST(OtelReaderTest, CApiThreadsBesideAnotherPublisher) {
  CheckWorkload({TestFile("tests/otel/otel_c_workload"), TestFile("jni/libctxprof.so")}, 3,
                TestFile("tests/otel/libforeign_otel_publisher.so"));
}

// The Java workload on each JDK the suite tests (tests/jdks.sh): JDK 17, and 25 when installed.
TEST(OtelReaderTest, JavaThreads) {
  const std::string classpath =
      TestFile("java/ctxprof.jar") + ":" + TestFile("tests/java/ctxprof_tests.jar");
  int jdks = 0;
  for (const char* home :
       {"/usr/lib/jvm/java-17-openjdk-amd64", "/usr/lib/jvm/temurin-25-jdk-amd64"}) {
    const std::string java = std::string(home) + "/bin/java";
    if (access(java.c_str(), X_OK) != 0) continue;
    SCOPED_TRACE(java);
    jdks++;
    CheckWorkload(
        {java, "-Dctxprof.library=" + TestFile("jni/libctxprof.so"),
         "--enable-native-access=ALL-UNNAMED", "-cp", classpath, "io.ctxprof.OtelWorkload"},
        4);
  }
  EXPECT_GT(jdks, 0) << "no JDK 17 at /usr/lib/jvm/java-17-openjdk-amd64";
}

// Publishing started by `ctxprof attach` on a JVM whose threads write through the Java fast path:
// the library turns the Java writers on (JvmAgent::SyncJavaOtel). JDK 25 (virtual threads too)
// when installed, else JDK 17.
TEST(OtelReaderTest, JavaThreadsAfterAttach) {
  std::string java = "/usr/lib/jvm/temurin-25-jdk-amd64/bin/java";
  if (access(java.c_str(), X_OK) != 0) java = "/usr/lib/jvm/java-17-openjdk-amd64/bin/java";
  CheckWorkload({java, "-Dctxprof.library=" + TestFile("jni/libctxprof.so"),
                 "--enable-native-access=ALL-UNNAMED", "-cp",
                 TestFile("java/ctxprof.jar") + ":" + TestFile("tests/java/ctxprof_tests.jar"),
                 "io.ctxprof.OtelWorkload", "attach"},
                4, "", /*attach=*/true);
}

}  // namespace
