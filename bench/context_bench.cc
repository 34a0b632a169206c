// The "context write cost" comparison: ctxprof's seqlock block against the alternatives a
// per-thread context store could use. Names are stable so results compare over time.
//   bazel run -c opt //bench:context_bench
#include <benchmark/benchmark.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "context/context_map.h"
#include "context/dictionary.h"

namespace ctxprof {
namespace {

ContextMap* Map() {
  ContextMap* map = ContextMap::Global();
  if (map == nullptr) {
    fprintf(stderr, "context_bench: %s\n", ContextMap::GlobalError().c_str());
    abort();
  }
  return map;
}

// The calling thread's block, looked up once as the Java side and the C API cache it.
ContextBlock* OwnBlock() {
  const pid_t tid = CurrentTid();
  Map()->OnThreadStart(tid);
  return Map()->BlockFor(tid);
}

void BM_SetAttribute(benchmark::State& state) {
  ContextBlock* block = OwnBlock();
  uint32_t id = Dictionary::kFirstValueId;
  for (auto _ : state) {
    BlockWriter(block).SetAttribute(0, id);
    id ^= 1;
  }
}
BENCHMARK(BM_SetAttribute)->Threads(1)->Threads(2)->UseRealTime();

// BM_SetAttribute/threads:2 with the two threads' blocks a page apart instead of adjacent: if
// both slow down alike, the cause is not false sharing (or the adjacent-line prefetcher) but the
// two CPUs slowing each other. The blocks belong to tids at the top of the map, above pid_max
// (the map holds 4 x pid_max tids), so no real thread writes them meanwhile.
void BM_SetAttribute_BlocksAPageApart(benchmark::State& state) {
  constexpr pid_t kBlocksPerPage = 4096 / sizeof(ContextBlock);
  const pid_t tid =
      static_cast<pid_t>(Map()->capacity()) - kBlocksPerPage * (state.thread_index() + 1);
  ContextBlock* block = Map()->BlockFor(tid);
  if (block == nullptr) {
    state.SkipWithError("no block for the chosen tid");
    return;
  }
  uint32_t id = Dictionary::kFirstValueId;
  for (auto _ : state) {
    BlockWriter(block).SetAttribute(0, id);
    id ^= 1;
  }
}
BENCHMARK(BM_SetAttribute_BlocksAPageApart)->Threads(2)->UseRealTime();

void BM_SetFullContext(benchmark::State& state) {
  ContextBlock* block = OwnBlock();
  uint64_t n = 1;
  for (auto _ : state) {
    BlockWriter writer(block);
    writer.SetTraceId(n, ~n);
    writer.SetSpanId(n * 7);
    writer.SetAttribute(0, 2);
    writer.SetAttribute(1, 3);
    n++;
  }
}
BENCHMARK(BM_SetFullContext);

void BM_ClearContext(benchmark::State& state) {
  ContextBlock* block = OwnBlock();
  for (auto _ : state) BlockWriter(block).Clear();
}
BENCHMARK(BM_ClearContext);

void BM_ReadSameThread(benchmark::State& state) {
  ContextBlock* block = OwnBlock();
  BlockWriter(block).SetSpanId(42);
  ContextSnapshot snapshot;
  for (auto _ : state) {
    benchmark::DoNotOptimize(ReadBlock(*block, &snapshot, kSameThreadReadAttempts));
    benchmark::DoNotOptimize(snapshot);
  }
}
BENCHMARK(BM_ReadSameThread);

// The block of another, idle thread (what the wall sampler reads).
void BM_ReadOtherThread(benchmark::State& state) {
  std::atomic<ContextBlock*> other{nullptr};
  std::atomic<bool> done{false};
  std::thread owner([&] {
    ContextBlock* block = OwnBlock();
    BlockWriter(block).SetSpanId(42);
    other.store(block);
    while (!done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  while (other.load() == nullptr) std::this_thread::yield();
  ContextSnapshot snapshot;
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        ReadBlock(*other.load(std::memory_order_relaxed), &snapshot, kOtherThreadReadAttempts));
    benchmark::DoNotOptimize(snapshot);
  }
  done.store(true);
  owner.join();
}
BENCHMARK(BM_ReadOtherThread);

// Alternatives. Each writes the same single attribute as BM_SetAttribute.

struct PlainBlock {
  uint64_t trace_id_high, trace_id_low, span_id;
  uint32_t attributes[kAttributeSlots];
};

// No protocol at all: readers can see torn values. The floor.
void BM_Alt_PlainStore(benchmark::State& state) {
  auto* block = reinterpret_cast<PlainBlock*>(OwnBlock());
  uint32_t id = Dictionary::kFirstValueId;
  for (auto _ : state) {
    block->attributes[0] = id;
    benchmark::ClobberMemory();
    id ^= 1;
  }
}
BENCHMARK(BM_Alt_PlainStore);

// A thread_local block: cheap to write, but other threads and out-of-process readers cannot
// find it, and a signal handler touching it risks lazy TLS initialisation.
thread_local PlainBlock tls_block;

void BM_Alt_ThreadLocal(benchmark::State& state) {
  uint32_t id = Dictionary::kFirstValueId;
  for (auto _ : state) {
    tls_block.attributes[0] = id;
    benchmark::ClobberMemory();
    id ^= 1;
  }
}
BENCHMARK(BM_Alt_ThreadLocal);

// Looking the tid up on every write instead of caching the block.
void BM_Alt_SyscallTid(benchmark::State& state) {
  OwnBlock();
  uint32_t id = Dictionary::kFirstValueId;
  for (auto _ : state) {
    ContextBlock* block = Map()->BlockFor(static_cast<pid_t>(syscall(SYS_gettid)));
    BlockWriter(block).SetAttribute(0, id);
    id ^= 1;
  }
}
BENCHMARK(BM_Alt_SyscallTid);

// A mutex per block: consistent, but a signal handler could never take it.
void BM_Alt_Mutex(benchmark::State& state) {
  auto* block = reinterpret_cast<PlainBlock*>(OwnBlock());
  std::mutex mutex;
  uint32_t id = Dictionary::kFirstValueId;
  for (auto _ : state) {
    std::lock_guard<std::mutex> lock(mutex);
    block->attributes[0] = id;
    id ^= 1;
  }
}
BENCHMARK(BM_Alt_Mutex);

std::unique_ptr<Dictionary> NewDictionary(uint32_t max_values) {
  Dictionary::Options options;
  options.max_values = max_values;
  options.max_total_bytes = static_cast<size_t>(max_values) * 16;
  std::string error;
  std::unique_ptr<Dictionary> dictionary = Dictionary::Create(options, &error);
  if (dictionary == nullptr) {
    fprintf(stderr, "context_bench: %s\n", error.c_str());
    abort();
  }
  return dictionary;
}

// Interning a value already present (what a Java cache miss on a known value costs natively).
void BM_DictionaryHit(benchmark::State& state) {
  auto dictionary = NewDictionary(1024);
  std::vector<std::string> values;
  for (int i = 0; i < 1000; i++) values.push_back("/endpoint/" + std::to_string(i));
  for (const auto& value : values) dictionary->Intern(value);
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(dictionary->Intern(values[i]));
    if (++i == values.size()) i = 0;
  }
}
BENCHMARK(BM_DictionaryHit);

// Interning a new value: the locked insert path. The dictionary is refilled when full, outside
// the timed region.
void BM_DictionaryMiss(benchmark::State& state) {
  constexpr uint32_t kValues = 1 << 18;
  std::vector<std::string> values;
  values.reserve(kValues);
  for (uint32_t i = 0; i < kValues; i++) values.push_back("tenant-" + std::to_string(i));
  auto dictionary = NewDictionary(kValues);
  uint32_t i = 0;
  for (auto _ : state) {
    if (i == kValues) {
      state.PauseTiming();
      dictionary = NewDictionary(kValues);
      i = 0;
      state.ResumeTiming();
    }
    benchmark::DoNotOptimize(dictionary->Intern(values[i++]));
  }
}
BENCHMARK(BM_DictionaryMiss);

}  // namespace
}  // namespace ctxprof

BENCHMARK_MAIN();
