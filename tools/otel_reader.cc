// An OpenTelemetry context reader (tools/otel_reader.h): OTEP 4719's process context and OTEP
// 4947's thread records, read from another process.
#include "tools/otel_reader.h"

#include <elf.h>
#include <errno.h>
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
#include <iterator>
#include <map>
#include <string>
#include <vector>

namespace ctxprof::tools {
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

StatusOr<std::vector<Mapping>> Maps(pid_t pid) {
  std::vector<Mapping> maps;
  const std::string path = "/proc/" + std::to_string(pid) + "/maps";
  std::ifstream in(path);
  if (!in) {
    const int error = errno;
    return Status::Io("process " + std::to_string(pid) + ": cannot read " + path + ": " +
                          strerror(error) + " (is it a running process of this user?)",
                      error);
  }
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

}  // namespace

StatusOr<ProcessContextView> ReadProcessContext(pid_t pid) {
  const std::string process = "process " + std::to_string(pid);
  const StatusOr<std::vector<Mapping>> maps = Maps(pid);
  if (!maps.ok()) return maps.status();
  uint64_t address = 0;
  for (const Mapping& m : maps.value()) {
    const bool named = m.name.rfind("[anon_shmem:OTEL_CTX]", 0) == 0 ||
                       m.name.rfind("[anon:OTEL_CTX]", 0) == 0 ||
                       m.name.rfind("/memfd:OTEL_CTX", 0) == 0;
    if (named && m.perms.find('x') == std::string::npos) address = m.start;
  }
  if (address == 0) {
    return Status::WrongState(process +
                              " publishes no OpenTelemetry context (no OTEL_CTX mapping): start "
                              "its profiling with otelcontext=true, e.g. ctxprof attach " +
                              std::to_string(pid) + " start --otelcontext true");
  }
  struct Header {
    char signature[8];
    uint32_t version, payload_size;
    uint64_t published_at_ns, payload;
  } header;
  for (int attempt = 0; attempt < 10; attempt++) {
    if (!Read(pid, address, &header)) {
      const int error = errno;
      return Status::Io(process + ": cannot read the OTEL_CTX header: " + strerror(error) +
                            " (reading another process needs ptrace permission: the same user "
                            "and kernel.yama.ptrace_scope 0, or CAP_SYS_PTRACE)",
                        error);
    }
    if (memcmp(header.signature, "OTEL_CTX", 8) != 0 || header.version != 2) {
      return Status::InvalidArgument(process +
                                     ": the OTEL_CTX mapping has another signature or version "
                                     "than OTEP 4719's version 2; its publisher is not ours");
    }
    if (header.published_at_ns == 0) continue;  // being written
    std::string payload(header.payload_size, '\0');
    uint64_t again = 0;
    if (!ReadMemory(pid, header.payload, &payload[0], payload.size()) ||
        !Read(pid, address + 16, &again)) {
      const int error = errno;
      return Status::Io(process + ": cannot read the OTEL_CTX payload: " + strerror(error), error);
    }
    if (again != header.published_at_ns) continue;  // updated while we copied
    std::vector<Field> fields;
    if (!ParseFields(payload, &fields)) {
      return Status::InvalidArgument(process + ": the OTEL_CTX payload is not protobuf");
    }
    ProcessContextView view;
    for (const Field& f : fields) {
      std::vector<Field> resource;
      if (f.number == 1 && ParseFields(f.bytes, &resource)) {
        for (const Field& r : resource) {
          std::string key;
          std::vector<std::string> values;
          if (r.number == 1 && ParseKeyValue(r.bytes, &key, &values) && values.size() == 1) {
            view.resource[key] = values[0];
          }
        }
      }
      std::string key;
      std::vector<std::string> values;
      if (f.number == 2 && ParseKeyValue(f.bytes, &key, &values)) view.attributes[key] = values;
    }
    return view;
  }
  return Status::Unavailable(process + ": the OTEL_CTX payload changed during 10 reads; try again",
                             0);
}

// ---- OTEP 4947: the TLS variable and a thread's record ------------------------------------------

StatusOr<TlsSlot> FindTlsDescriptor(const std::string& path, uint64_t base) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    const int error = errno;
    return Status::Io(path + ": cannot open: " + strerror(error), error);
  }
  std::string elf((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  auto bad = [&](const std::string& what) {
    return Status::InvalidArgument(path + ": " + what +
                                   " (not a libctxprof.so built with "
                                   "-mtls-dialect=gnu2?)");
  };
  if (elf.size() < sizeof(Elf64_Ehdr) || memcmp(elf.data(), ELFMAG, SELFMAG) != 0) {
    return bad("not an ELF file");
  }
  const auto* header = reinterpret_cast<const Elf64_Ehdr*>(elf.data());
  const auto* sections = reinterpret_cast<const Elf64_Shdr*>(elf.data() + header->e_shoff);
  int dynsym = -1;
  for (int i = 0; i < header->e_shnum; i++) {
    if (sections[i].sh_type == SHT_DYNSYM) dynsym = i;
  }
  if (dynsym < 0) return bad("no .dynsym");
  const auto* symbols = reinterpret_cast<const Elf64_Sym*>(elf.data() + sections[dynsym].sh_offset);
  const char* names = elf.data() + sections[sections[dynsym].sh_link].sh_offset;
  const size_t count = sections[dynsym].sh_size / sizeof(Elf64_Sym);
  size_t index = 0;
  for (size_t i = 1; i < count; i++) {
    if (strcmp(names + symbols[i].st_name, "otel_thread_ctx_v1") == 0) index = i;
  }
  if (index == 0) return bad("otel_thread_ctx_v1 is not in .dynsym");
  const Elf64_Sym& symbol = symbols[index];
  if (ELF64_ST_TYPE(symbol.st_info) != STT_TLS || symbol.st_size != 8 ||
      ELF64_ST_BIND(symbol.st_info) != STB_GLOBAL ||
      ELF64_ST_VISIBILITY(symbol.st_other) != STV_DEFAULT) {
    return bad("otel_thread_ctx_v1 is not a global, default-visibility, 8-byte STT_TLS symbol");
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
        return bad("otel_thread_ctx_v1 has relocation type " +
                   std::to_string(ELF64_R_TYPE(relocations[r].r_info)) + ", not R_X86_64_TLSDESC");
      }
      TlsSlot slot;
      slot.descriptor = base + relocations[r].r_offset;
      return slot;
    }
  }
  return bad("no relocation references otel_thread_ctx_v1");
}

StatusOr<TlsSlot> FindThreadContextSlot(pid_t pid) {
  const StatusOr<std::vector<Mapping>> maps = Maps(pid);
  if (!maps.ok()) return maps.status();
  for (const Mapping& m : maps.value()) {
    if (m.offset == 0 && m.name.find("libctxprof.so") != std::string::npos) {
      // Through /proc/PID/root: the path as the target sees it (another mount namespace).
      const std::string path = "/proc/" + std::to_string(pid) + "/root" + m.name;
      return FindTlsDescriptor(access(path.c_str(), R_OK) == 0 ? path : m.name, m.start);
    }
  }
  return Status::WrongState("process " + std::to_string(pid) +
                            " has no libctxprof.so mapped: it publishes no thread contexts; "
                            "start profiling it with ctxprof attach " +
                            std::to_string(pid) + " start --otelcontext true");
}

namespace {

std::string Hex(const uint8_t* bytes, size_t size) {
  std::string text;
  char digits[3];
  for (size_t i = 0; i < size; i++) {
    snprintf(digits, sizeof(digits), "%02x", bytes[i]);
    text += digits;
  }
  return text;
}

}  // namespace

StatusOr<ThreadView> ReadThreadContext(pid_t pid, pid_t tid, const TlsSlot& slot) {
  const std::string thread = "thread " + std::to_string(tid) + " of process " + std::to_string(pid);
  if (ptrace(PTRACE_SEIZE, tid, nullptr, nullptr) != 0) {
    const int error = errno;
    return Status::Unavailable(
        thread + ": PTRACE_SEIZE: " + strerror(error) +
            (error == EPERM ? " (run as the process's user with kernel.yama.ptrace_scope 0, or "
                              "with CAP_SYS_PTRACE; a debugger attached already also refuses)"
                            : ""),
        error);
  }
  ThreadView view;
  Status failure;
  int status = 0;
  user_regs_struct regs;
  auto fail = [&](const std::string& what, int error) {
    failure = Status::Unavailable(
        thread + ": " + what + (error != 0 ? ": " : "") + (error != 0 ? strerror(error) : ""),
        error);
  };
  if (ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) != 0) {
    fail("PTRACE_INTERRUPT", errno);
  } else if (waitpid(tid, &status, __WALL) != tid) {
    fail("waitpid", errno);
  } else if (ptrace(PTRACE_GETREGS, tid, nullptr, &regs) != 0) {
    fail("PTRACE_GETREGS", errno);
  } else {
    const uint64_t tp = regs.fs_base;
    uint64_t descriptor[2] = {};  // {resolver, argument}
    uint64_t variable = 0;
    if (!ReadMemory(pid, slot.descriptor, descriptor, sizeof(descriptor))) {
      fail("cannot read the TLS descriptor", errno);
    } else if (static_cast<int64_t>(descriptor[1]) > 0xffffffffLL) {
      // Dynamic TLS: the argument points at {module id, offset}; glibc's DTV has 16-byte entries
      // and its address at tp + 8.
      view.dynamic_tls = true;
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
    if (failure.ok() && variable != 0 && Read(pid, variable, &pointer) && pointer != 0) {
      if (!ReadMemory(pid, pointer, header, sizeof(header))) {
        fail("otel_thread_ctx_v1 does not point at readable memory", errno);
      } else if (header[24] == 1) {
        view.present = true;
        view.trace = Hex(header, 16);
        view.span = Hex(header + 16, 8);
        uint16_t size;
        memcpy(&size, header + 26, 2);
        std::vector<uint8_t> data(size);
        if (!ReadMemory(pid, pointer + 28, data.data(), size)) {
          fail("cannot read the record's attrs-data", errno);
        }
        for (size_t i = 0; failure.ok() && i + 2 <= data.size();) {
          const size_t length = data[i + 1];
          if (i + 2 + length > data.size()) break;  // a partial entry ends the list
          view.attributes[data[i]] =
              std::string(reinterpret_cast<const char*>(data.data()) + i + 2, length);
          i += 2 + length;
        }
      }
    }
  }
  // Detaching lets the thread run on; a thread that exited meanwhile has nothing to detach.
  ptrace(PTRACE_DETACH, tid, nullptr, nullptr);
  if (!failure.ok()) return failure;
  return view;
}

}  // namespace ctxprof::tools
