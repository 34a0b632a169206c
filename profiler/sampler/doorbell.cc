#include "profiler/sampler/doorbell.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

namespace ctxprof {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) &&
                  std::atomic<uint32_t>::is_always_lock_free,
              "the futex word must be a plain 32-bit integer");

void Doorbell::Ring() {
  sequence_.fetch_add(1, std::memory_order_release);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&sequence_), FUTEX_WAKE_PRIVATE, 1, nullptr,
          nullptr, 0);
}

void Doorbell::Wait(uint32_t seen, std::chrono::nanoseconds timeout) {
  const long long nanos = timeout.count() > 0 ? timeout.count() : 0;
  const timespec relative = {static_cast<time_t>(nanos / 1000000000),
                             static_cast<long>(nanos % 1000000000)};
  // EAGAIN (rung since `seen`), ETIMEDOUT and EINTR all mean: go and look.
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&sequence_), FUTEX_WAIT_PRIVATE, seen, &relative,
          nullptr, 0);
}

}  // namespace ctxprof
