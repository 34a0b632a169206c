#include "context/context_map.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

namespace ctxprof {

namespace {

// Reads a small decimal file such as /proc/sys/kernel/pid_max; 0 when unreadable or malformed.
size_t ReadDecimalFile(const char* path) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char text[32] = {};
  const ssize_t n = read(fd, text, sizeof(text) - 1);
  close(fd);
  if (n <= 0) return 0;
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = strtoull(text, &end, 10);
  if (errno != 0 || end == text) return 0;
  return static_cast<size_t>(value);
}

std::string* global_error = new std::string();  // leaked: read after static destruction too

}  // namespace

size_t ContextMap::DefaultCapacity(const char* pid_max_path) {
  const size_t pid_max = ReadDecimalFile(pid_max_path);
  if (pid_max == 0) return kMaxCapacity;
  // Divide rather than multiply to avoid overflow on absurd inputs.
  if (pid_max > kMaxCapacity / kPidMaxHeadroom) return kMaxCapacity;
  return std::clamp(pid_max * kPidMaxHeadroom, kMinCapacity, kMaxCapacity);
}

ContextMap* ContextMap::Create(size_t capacity, std::string* error) {
  if (capacity == 0 || capacity > kMaxCapacity) {
    *error = "context map capacity " + std::to_string(capacity) + " is out of range: use 1.." +
             std::to_string(kMaxCapacity) + " thread ids";
    return nullptr;
  }
  // The ContextMap object (with the span log pool's bookkeeping) lives in the first pages of
  // its own mapping, so neither it nor the blocks are ever freed (and leak checkers see no heap
  // object left behind).
  constexpr size_t kPageBytes = 4096;
  constexpr size_t kHeaderBytes = (sizeof(ContextMap) + kPageBytes - 1) / kPageBytes * kPageBytes;
  const size_t bytes =
      kHeaderBytes + capacity * sizeof(ContextBlock) + SpanLogPool::kBytes + OtelRecordPool::kBytes;
  void* memory = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED) {
    const int saved = errno;
    *error = "cannot reserve " + std::to_string(bytes >> 20) + " MiB for the context map (" +
             std::to_string(capacity) + " thread ids): mmap: " + strerror(saved) +
             "; check vm.overcommit_memory and RLIMIT_AS";
    return nullptr;
  }
  // Page-aligned memory makes every block 64-byte aligned; anonymous pages read as zero, which
  // is the empty context.
  auto* blocks = reinterpret_cast<ContextBlock*>(static_cast<char*>(memory) + kHeaderBytes);
  return new (memory) ContextMap(blocks, capacity);
}

ContextMap* ContextMap::Global() {
  static ContextMap* const map = Create(DefaultCapacity(), global_error);
  return map;
}

const std::string& ContextMap::GlobalError() { return *global_error; }

void ContextMap::ClearOwnBlock(pid_t tid) {
  ContextBlock* block = BlockFor(tid);
  if (block == nullptr) return;
  BlockWriter(block).Clear();
}

void ContextMap::OnThreadStart(pid_t tid) { ClearOwnBlock(tid); }

void ContextMap::OnThreadEnd(pid_t tid) { ClearOwnBlock(tid); }

pid_t CurrentTid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

namespace {

__attribute__((tls_model("initial-exec"))) __thread pid_t cached_tid = 0;

// In a fork child the forking thread keeps its TLS but has a new tid.
void ForgetTidInChild() { cached_tid = 0; }

// Registered when the library loads, so CachedTid() itself never takes a lock.
const int fork_handler_registered = pthread_atfork(nullptr, nullptr, ForgetTidInChild);

}  // namespace

pid_t CachedTid() {
  if (cached_tid == 0) cached_tid = CurrentTid();
  return cached_tid;
}

}  // namespace ctxprof
