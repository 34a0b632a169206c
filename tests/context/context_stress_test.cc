// Concurrency stress for the seqlock: writers keep writing patterned whole contexts while
// (a) a reader thread copies their blocks and (b) a signal delivered to each writer reads the
// writer's own block inside the handler. Every read reported consistent must be a context some
// writer wrote whole. Bounded by CTXPROF_STRESS_MILLIS (default 1500 ms).
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "context/context_map.h"

namespace ctxprof {
namespace {

uint64_t Mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}

// Context number `n` of writer `w`: every field derives from (w, n), so a copy that mixes two
// writes (or two writers) fails IsWholeContext.
ContextSnapshot Pattern(uint32_t writer, uint64_t n) {
  ContextSnapshot context{};
  context.trace_id_high = (static_cast<uint64_t>(writer) << 48) | (n & 0xffffffffffffull);
  context.trace_id_low = Mix(context.trace_id_high);
  context.span_id = Mix(context.trace_id_low);
  for (int i = 0; i < kAttributeSlots; i++) {
    context.attributes[i] = static_cast<uint32_t>(Mix(context.span_id + i));
  }
  return context;
}

bool IsWholeContext(const ContextSnapshot& context, uint32_t writer) {
  if (context.empty()) return true;  // the state before the writer's first write
  if ((context.trace_id_high >> 48) != writer) return false;
  return context == Pattern(writer, context.trace_id_high & 0xffffffffffffull);
}

constexpr int kWriters = 3;
ContextMap* g_map = nullptr;
std::atomic<pid_t> g_writer_tids[kWriters];

struct ReadCounts {
  std::atomic<uint64_t> consistent{0};
  std::atomic<uint64_t> busy{0};
  std::atomic<uint64_t> torn{0};
  std::atomic<uint64_t> mixed{0};  // consistent but not a whole context: must stay 0

  void Count(ReadStatus status, const ContextSnapshot& context, uint32_t writer) {
    switch (status) {
      case ReadStatus::kConsistent:
        consistent.fetch_add(1, std::memory_order_relaxed);
        if (!IsWholeContext(context, writer)) mixed.fetch_add(1, std::memory_order_relaxed);
        break;
      case ReadStatus::kBusy:
        busy.fetch_add(1, std::memory_order_relaxed);
        if (!context.empty()) mixed.fetch_add(1, std::memory_order_relaxed);
        break;
      case ReadStatus::kTorn:
        torn.fetch_add(1, std::memory_order_relaxed);
        if (!context.empty()) mixed.fetch_add(1, std::memory_order_relaxed);
        break;
    }
  }
};

ReadCounts g_handler_reads;
ReadCounts g_reader_reads;

// Async-signal-safe: a syscall, a bounds-checked lookup, the seqlock reader and atomics.
void ReadOwnBlockInHandler(int) {
  const int saved_errno = errno;
  const pid_t tid = CurrentTid();
  for (uint32_t writer = 0; writer < kWriters; writer++) {
    if (g_writer_tids[writer].load(std::memory_order_relaxed) != tid) continue;
    ContextBlock* block = g_map->BlockFor(tid);
    if (block == nullptr) break;
    ContextSnapshot context;
    const ReadStatus status = ReadBlock(*block, &context, kSameThreadReadAttempts);
    g_handler_reads.Count(status, context, writer);
    break;
  }
  errno = saved_errno;
}

TEST(ContextStressTest, ConsistentReadsAreAlwaysWholeWrites) {
  std::string error;
  g_map = ContextMap::Create(ContextMap::DefaultCapacity(), &error);
  ASSERT_NE(g_map, nullptr) << error;

  struct sigaction action = {};
  action.sa_handler = ReadOwnBlockInHandler;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  struct sigaction previous;
  ASSERT_EQ(sigaction(SIGUSR1, &action, &previous), 0);

  const char* millis_env = getenv("CTXPROF_STRESS_MILLIS");
  const auto duration = std::chrono::milliseconds(millis_env ? atoi(millis_env) : 1500);
  std::atomic<bool> stop{false};
  std::atomic<int> ready{0};
  std::vector<pthread_t> writer_handles(kWriters);
  std::vector<std::thread> writers;
  std::atomic<uint64_t> writes{0};
  for (uint32_t w = 0; w < kWriters; w++) {
    writers.emplace_back([&, w] {
      const pid_t tid = CurrentTid();
      g_map->OnThreadStart(tid);
      ContextBlock* block = g_map->BlockFor(tid);
      writer_handles[w] = pthread_self();
      g_writer_tids[w].store(tid);
      ready.fetch_add(1);
      uint64_t n = 1;
      while (!stop.load(std::memory_order_relaxed)) {
        BlockWriter(block).SetAll(Pattern(w, n++));
      }
      writes.fetch_add(n - 1);
      g_writer_tids[w].store(0);  // no more handler reads attributed to this writer
      g_map->OnThreadEnd(tid);
    });
  }
  while (ready.load() < kWriters) std::this_thread::yield();

  std::thread reader([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      for (uint32_t w = 0; w < kWriters; w++) {
        const pid_t tid = g_writer_tids[w].load();
        if (tid == 0) continue;
        ContextSnapshot context;
        const ReadStatus status =
            ReadBlock(*g_map->BlockFor(tid), &context, kOtherThreadReadAttempts);
        g_reader_reads.Count(status, context, w);
      }
    }
  });
  std::thread signaller([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      for (uint32_t w = 0; w < kWriters; w++) pthread_kill(writer_handles[w], SIGUSR1);
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  });

  std::this_thread::sleep_for(duration);
  stop.store(true);
  signaller.join();
  reader.join();
  for (auto& writer : writers) writer.join();
  sigaction(SIGUSR1, &previous, nullptr);

  printf("writes: %llu\n", static_cast<unsigned long long>(writes.load()));
  for (auto [name, counts] : {std::pair<const char*, ReadCounts*>{"reader thread", &g_reader_reads},
                              {"signal handler", &g_handler_reads}}) {
    printf("%s: %llu consistent, %llu busy, %llu torn detected, %llu mixed\n", name,
           static_cast<unsigned long long>(counts->consistent.load()),
           static_cast<unsigned long long>(counts->busy.load()),
           static_cast<unsigned long long>(counts->torn.load()),
           static_cast<unsigned long long>(counts->mixed.load()));
    EXPECT_EQ(counts->mixed.load(), 0u) << name << " returned a context no writer wrote whole";
    EXPECT_GT(counts->consistent.load(), 0u) << name << " never read a consistent context";
  }
  EXPECT_GT(writes.load(), 0u);
}

}  // namespace
}  // namespace ctxprof
