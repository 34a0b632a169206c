#include "context/otel_process_context.h"

#include <errno.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

namespace ctxprof {

namespace {

constexpr unsigned kMemfdNoExecSeal =
    0x0008U;                           // MFD_NOEXEC_SEAL (Linux 6.3), absent in old headers
constexpr int kPrSetVma = 0x53564d41;  // PR_SET_VMA
constexpr int kPrSetVmaAnonName = 0;   // PR_SET_VMA_ANON_NAME

struct Header {
  char signature[8];
  uint32_t version;
  uint32_t payload_size;
  std::atomic<uint64_t> published_at_ns;
  std::atomic<uint64_t> payload;
};
static_assert(sizeof(Header) == 32, "OTEP 4719 header");

void PutVarint(uint64_t value, std::string* out) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>(value | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

// A length-delimited field (wire type 2).
void PutBytes(int field, const std::string& bytes, std::string* out) {
  PutVarint(static_cast<uint64_t>(field) << 3 | 2, out);
  PutVarint(bytes.size(), out);
  out->append(bytes);
}

// AnyValue{string_value = 1}.
std::string StringValue(const std::string& text) {
  std::string value;
  PutBytes(1, text, &value);
  return value;
}

// KeyValue{key = 1, value = 2}.
std::string KeyValue(const std::string& key, const std::string& any_value) {
  std::string pair;
  PutBytes(1, key, &pair);
  PutBytes(2, any_value, &pair);
  return pair;
}

uint64_t BootTimeNs() {
  timespec now;
  clock_gettime(CLOCK_BOOTTIME, &now);  // cannot fail for CLOCK_BOOTTIME with a valid pointer
  return static_cast<uint64_t>(now.tv_sec) * 1000000000 + static_cast<uint64_t>(now.tv_nsec);
}

// One page holding the header: a memfd's private mapping, else an anonymous one.
Header* MapHeader(std::string* error) {
  const size_t bytes = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  int fd = static_cast<int>(
      syscall(SYS_memfd_create, "OTEL_CTX", MFD_CLOEXEC | MFD_ALLOW_SEALING | kMemfdNoExecSeal));
  if (fd < 0 && errno == EINVAL) {
    fd = static_cast<int>(syscall(SYS_memfd_create, "OTEL_CTX", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  }
  void* memory = MAP_FAILED;
  if (fd >= 0) {
    if (ftruncate(fd, static_cast<off_t>(bytes)) == 0) {
      memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    }
    close(fd);
  }
  if (memory == MAP_FAILED) {
    memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  }
  if (memory == MAP_FAILED) {
    *error = std::string("cannot map the OpenTelemetry process context (OTEL_CTX): mmap: ") +
             strerror(errno) + "; check RLIMIT_AS and vm.max_map_count";
    return nullptr;
  }
  // Children start without a context (theirs would describe us); failure only loses that.
  madvise(memory, bytes, MADV_DONTFORK);
  return static_cast<Header*>(memory);
}

std::mutex publish_mutex;
Header* header = nullptr;        // guarded by publish_mutex
uint64_t last_published_ns = 0;  // guarded by publish_mutex

}  // namespace

std::string EncodeOtelProcessContext(const OtelResource& resource,
                                     const std::vector<std::string>& attribute_key_map) {
  std::string resource_message;
  for (const auto& [key, value] : resource) {
    PutBytes(1, KeyValue(key, StringValue(value)), &resource_message);
  }
  std::string names;  // ArrayValue{values = 1}
  for (const std::string& name : attribute_key_map) PutBytes(1, StringValue(name), &names);
  std::string key_map;  // AnyValue{array_value = 5}
  PutBytes(5, names, &key_map);
  std::string message;
  PutBytes(1, resource_message, &message);
  PutBytes(2, KeyValue("threadlocal.schema_version", StringValue("tlsdesc_v1_dev")), &message);
  PutBytes(2, KeyValue("threadlocal.attribute_key_map", key_map), &message);
  return message;
}

bool PublishOtelProcessContext(const OtelResource& resource,
                               const std::vector<std::string>& attribute_key_map,
                               std::string* error) {
  // Never freed: a reader in another process may be copying an older payload right now. Kept
  // in a list (republishing is rare: once per attribute registration) so that it stays reachable.
  static auto* payloads = new std::vector<std::unique_ptr<std::string>>();
  std::lock_guard<std::mutex> lock(publish_mutex);
  payloads->push_back(
      std::make_unique<std::string>(EncodeOtelProcessContext(resource, attribute_key_map)));
  const std::string* payload = payloads->back().get();
  if (header == nullptr) {
    header = MapHeader(error);
    if (header == nullptr) return false;
    memcpy(header->signature, "OTEL_CTX", 8);
    header->version = 2;
  }
  header->published_at_ns.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  header->payload_size = static_cast<uint32_t>(payload->size());
  header->payload.store(reinterpret_cast<uintptr_t>(payload->data()), std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  uint64_t now = BootTimeNs();
  if (now <= last_published_ns) now = last_published_ns + 1;
  last_published_ns = now;
  header->published_at_ns.store(now, std::memory_order_seq_cst);
  // Ignored on kernels without CONFIG_ANON_VMA_NAME (EINVAL): the memfd name still shows.
  prctl(kPrSetVma, kPrSetVmaAnonName, reinterpret_cast<unsigned long>(header),
        static_cast<unsigned long>(sysconf(_SC_PAGESIZE)),
        reinterpret_cast<unsigned long>("OTEL_CTX"));
  return true;
}

}  // namespace ctxprof
