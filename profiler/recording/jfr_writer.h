// JfrWriter: turns SampleRecords into a JFR recording readable by JDK 17 and JDK 25 `jfr`,
// JMC and our JfrReader. See docs/JFR.md for the format decisions.
//
// What a chunk contains, in file order:
//   68-byte header (generation 1, size 68, no metadata: "unfinished" to every reader)
//   metadata record (jfr_metadata.h; the same bytes and id in every chunk)
//   ctxprof.ProfilerSettings event
//   segments: sample events, ctxprof.Context events, then one checkpoint (FLUSH bit) with every
//     pool entry those events reference that this chunk has not carried yet
//   at chunk end: ctxprof.ProfilerCounters event and a last checkpoint
// After each segment the header is patched in place with the generation protocol
// (byte 64 = 255, fields, byte 64 = next generation); at chunk end the generation is 0.
//
// Samples:
//  * kWall samples  -> ctxprof.WallClockSample {startTime, eventThread, stackTrace, state, weight}
//  * kCpu samples   -> jdk.ExecutionSample {startTime, sampledThread, stackTrace, state}
//                      (cpu_samples = kJdk, the default: every JFR tool knows this event, and
//                      async-profiler's converter requires exactly these fields), or
//                      ctxprof.CpuSample with the wall sample's fields (cpu_samples = kCtxprof).
//    JDK 25's `jfr print` attaches @Contextual values only to events with an eventThread, and
//    jdk.ExecutionSample has none: choose kCtxprof to see "Context:" lines under CPU samples,
//    at the price of tools that only look for jdk.ExecutionSample not seeing CPU samples.
//    jdk.ExecutionSample cannot carry the sample weight; the ctxprof events do.
//  * Context: per thread, a run of consecutive samples with the same non-empty ContextSnapshot
//    becomes one ctxprof.Context event. It starts at the run's first sample and ends at the
//    smallest tick count that converts to a time strictly after the run's last sample (JDK tick
//    conversion, with one nanosecond of margin for per-chunk rounding), so [start, end) covers
//    exactly the run's samples. A run also ends at a flush and at a chunk end (every segment and
//    every chunk carries the contexts of its own samples), and when a thread's samples arrive
//    out of tick order (then the intervals around that sample may overlap: keep samples of one
//    thread in tick order).
//
// Keys of every constant pool are stable for the whole recording (JFR readers cache pool
// entries across chunks by key), and every chunk re-emits the entries its events use.
// Attribute values are keyed by their Dictionary id.
//
// Rotation: a chunk ends when it reaches `chunk_size_bytes` or `chunk_time_nanos`. In file
// mode chunks are appended to one file; in repository mode each chunk is its own file
// (`<repository>/ctxprof-<sequence>.jfr`, mode 0600, folder 0700; the sequence continues after
// files an earlier session left there, which are never overwritten nor deleted) and this
// session's finished chunk files are deleted oldest first to respect `max_size_bytes` and
// `max_age_nanos`.
//
// Failure: the first I/O error stops the writer (every later call returns false with the same
// message). The chunk being written then keeps a header that says "unfinished" (generation
// != 0), so no reader mistakes it for a complete chunk; chunks finished before stay valid.
//
// Thread safety: NOT thread-safe. One thread (the profiler's background writer thread) creates
// the writer and makes every call. Resolvers are called from that thread.
#ifndef CTXPROF_PROFILER_RECORDING_JFR_WRITER_H_
#define CTXPROF_PROFILER_RECORDING_JFR_WRITER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "context/attribute_registry.h"
#include "context/dictionary.h"
#include "profiler/jfr/jfr_buffer.h"
#include "profiler/jfr/jfr_file.h"
#include "profiler/recording/frame_resolver.h"
#include "profiler/sampler/clock.h"
#include "profiler/sampler/sample.h"

namespace ctxprof {

enum class CpuSampleEvent : uint8_t {
  kJdk = 0,      // jdk.ExecutionSample
  kCtxprof = 1,  // ctxprof.CpuSample (has eventThread, so JDK 25 shows Context lines)
};

// Settings of one recording. The option parser (owned by the sampler) fills it.
struct JfrWriterConfig {
  // Exactly one of the two: a single file that receives every chunk, or a repository folder
  // that receives one file per chunk.
  std::string path;
  std::string repository;

  CpuSampleEvent cpu_samples = CpuSampleEvent::kJdk;
  uint64_t chunk_size_bytes = 0;               // 0 = no size limit
  uint64_t chunk_time_nanos = 0;               // 0 = no time limit
  uint64_t flush_interval_nanos = 1000000000;  // 0 = flush only at chunk end
  uint64_t max_size_bytes = 0;          // repository mode: total of finished chunk files; 0 = none
  uint64_t max_age_nanos = 0;           // repository mode: age of a finished chunk's end; 0 = none
  size_t write_buffer_bytes = 1 << 20;  // events are appended to the file in blocks this large
  // Stack deduplication keeps every stack's frames. When they exceed this at a rotation, the
  // stacks the finished chunk did not use are dropped (seen again, such a stack gets a new key;
  // keys are never reused). Without rotation nothing is dropped.
  uint64_t stack_cache_bytes = 64 << 20;

  // Self-description, written as ctxprof.ProfilerSettings at the start of every chunk.
  std::string engine;  // the engine really used, e.g. "perf_cpu_clock"
  uint64_t interval_nanos = 0;
  std::string fallbacks;  // e.g. "perf_events unavailable (EACCES) -> ctimer"; may be empty
  int32_t stack_depth = kDefaultStackDepth;
};

// What the writer needs from the rest of the profiler. All pointers must outlive the writer.
struct JfrWriterInputs {
  const Clock* clock = nullptr;
  FrameResolver* frames = nullptr;
  ThreadResolver* threads = nullptr;
  const Dictionary* dictionary = nullptr;
  const AttributeRegistry* attributes = nullptr;
  // Samples the sampler dropped so far (written in ctxprof.ProfilerCounters); may be empty.
  std::function<uint64_t()> dropped_samples;
};

class JfrWriter {
 public:
  // Validates `config`, creates the file (or the repository folder, 0700, and the first chunk
  // file) and writes the first chunk's header and metadata. nullptr + *error on failure.
  static std::unique_ptr<JfrWriter> Open(const JfrWriterConfig& config,
                                         const JfrWriterInputs& inputs, std::string* error);
  ~JfrWriter();
  JfrWriter(const JfrWriter&) = delete;
  JfrWriter& operator=(const JfrWriter&) = delete;

  // Adds one sample. Samples of one thread should arrive in tick order. May flush or rotate.
  bool Add(const SampleRecord& sample, std::string* error);
  // Time-based work (periodic flush, chunk_time rotation, max_age retention). Add() does it
  // too; call this when no samples arrive, at least once per flush interval.
  bool Tick(std::string* error);
  // Publishes everything added so far: after it returns true, a reader sees every sample.
  bool Flush(std::string* error);
  // Ends the current chunk and starts the next one.
  bool Rotate(std::string* error);
  // Finishes the recording (last chunk gets the final flag) and closes it. Idempotent; the
  // destructor calls it, so a writer never leaves a chunk unfinished on a normal shutdown.
  bool Close(std::string* error);

  // Totals, for tests and for the counters event.
  uint64_t samples_written() const { return counters_.samples; }
  uint64_t chunks_finished() const { return chunks_finished_; }
  // Frames kept for stack deduplication (see stack_cache_bytes).
  size_t cached_stack_frames() const { return frames_.size(); }
  // Repository mode: the finished chunk files still present, oldest first.
  std::vector<std::string> finished_chunk_files() const;

 private:
  struct Counters {
    uint64_t samples = 0;
    uint64_t cpu_samples = 0;
    uint64_t wall_samples = 0;
    uint64_t context_busy = 0;
    uint64_t context_torn = 0;
    uint64_t truncated_stacks = 0;
  };
  // Which pool entries the current chunk has already carried, and which it still must.
  struct PoolState {
    std::vector<uint32_t> chunk_of_key;  // key -> last chunk number that carried it
    std::vector<uint32_t> pending;       // keys to put into the next checkpoint
    // True if `key` was not yet carried (or queued) in chunk `chunk`; queues it.
    bool Mark(uint32_t key, uint32_t chunk);
  };
  // Interns strings to stable keys 1, 2, ...
  struct StringTable {
    std::unordered_map<std::string, uint32_t> keys;
    std::vector<std::string> values;  // values[key - 1]
    uint32_t Intern(const std::string& value);
  };
  struct Method {
    uint32_t class_key;
    uint32_t name_symbol;
    uint32_t descriptor_symbol;
  };
  struct Class {
    uint32_t name_symbol;
    uint32_t package_key;  // 0 = no package
  };
  struct Frame {
    uint32_t method_key;
    int32_t line_number;
    int32_t bci;
    JfrFrameType type;
  };
  struct Stack {
    uint64_t hash;
    uint64_t check;
    size_t first_frame;  // index into frames_
    uint32_t frame_count;
    bool truncated;
    bool dropped;  // frames released by DropUnusedStacks; the key is retired
  };
  struct StackSlot {
    uint64_t hash = 0;   // places the slot
    uint64_t check = 0;  // second, independent hash: with `hash` the stack's fingerprint
    uint32_t key = 0;    // 0 = empty
  };
  // A resolved frame, cached by its raw identity.
  struct FrameSlot {
    uint64_t id = 0;
    int32_t bci = 0;
    FrameKind kind = FrameKind::kNative;
    bool used = false;
    Frame frame{};
  };
  struct Thread {
    std::string name;
    int32_t tid;
    int64_t java_thread_id;
  };
  // An open run of samples of one thread under one context.
  struct ContextRun {
    bool open = false;
    ContextSnapshot context;
    uint32_t thread_key = 0;
    uint64_t first_ticks = 0;
    uint64_t last_ticks = 0;
  };
  // What the writer knows about one kernel thread id.
  struct ThreadSlot {
    uint32_t key = 0;  // Thread pool key
    uint32_t resolved_in_chunk = 0;
    ContextRun run;
  };
  struct ChunkFile {
    std::string path;
    uint64_t bytes;
    int64_t end_epoch_nanos;
  };

  JfrWriter(const JfrWriterConfig& config, const JfrWriterInputs& inputs);
  bool Fail(const std::string& message, std::string* error);
  bool StartChunk(std::string* error);
  bool FinishChunk(bool last, std::string* error);
  bool WriteSegment(bool chunk_end, bool final_chunk, std::string* error);
  bool WriteBuffered(std::string* error);
  bool PatchHeader(uint8_t generation, bool final_chunk, std::string* error);
  bool ApplyRetention(std::string* error);
  bool MaybeFlushOrRotate(uint64_t now_ticks, std::string* error);

  uint32_t ThreadKey(int32_t tid, ThreadSlot* slot);
  uint32_t StackKey(const SampleRecord& sample);
  // Rebuilds the stack table for `slots` slots (a power of two) from the live stacks.
  void RebuildStackTable(size_t slots);
  // Releases the frames of stacks that chunk `chunk` did not use.
  void DropUnusedStacks(uint32_t chunk);
  Frame ResolveFrame(const RawFrame& raw);
  uint32_t MethodKey(const ResolvedFrame& frame);
  uint32_t ClassKey(const std::string& class_name);
  void MarkStack(uint32_t stack_key);
  void MarkMethod(uint32_t method_key);
  void MarkSymbol(uint32_t symbol_key);
  void TrackContext(const SampleRecord& sample, uint32_t thread_key, ContextRun* current);
  // Emits `run`'s ctxprof.Context event; its end stays <= next_ticks when that allows it.
  void EndRun(ContextRun* run, uint64_t next_ticks);
  void EndAllRuns();
  // Frames scratch_ (type id + fields) as one record at the end of buffer_.
  void AppendRecord();
  void WriteSettingsEvent();
  void WriteCountersEvent();
  void WriteCheckpoint(bool with_statics);
  uint64_t ContextDurationTicks(uint64_t first_ticks, uint64_t last_ticks) const;

  const JfrWriterConfig config_;
  const JfrWriterInputs inputs_;
  const std::vector<std::string> attribute_names_;
  bool failed_ = false;
  bool closed_ = false;
  std::string failure_;

  // The current chunk.
  JfrFile file_;
  uint64_t chunk_offset_ = 0;  // where the chunk starts in file_
  uint32_t chunk_number_ = 0;  // 1, 2, ... (0 = none yet)
  uint64_t chunk_start_ticks_ = 0;
  int64_t chunk_start_nanos_ = 0;
  uint64_t chunk_max_ticks_ = 0;         // latest tick of any event in the chunk
  uint64_t metadata_offset_ = 0;         // chunk-relative
  uint64_t last_checkpoint_offset_ = 0;  // chunk-relative, 0 = none yet
  uint8_t generation_ = 1;
  // End of the chunk as last published in its header (the next chunk starts no earlier).
  uint64_t previous_chunk_end_ticks_ = 0;
  int64_t previous_chunk_end_nanos_ = 0;
  JfrBuffer buffer_;  // chunk bytes not yet in file_, starting at file_.size()
  JfrBuffer scratch_;
  uint64_t flush_interval_ticks_ = 0;  // 0 = no periodic flush
  uint64_t chunk_time_ticks_ = 0;      // 0 = no chunk_time limit
  uint64_t next_flush_ticks_ = 0;
  uint64_t chunk_end_ticks_ = 0;  // 0 = none
  // Estimated size of the pool entries the next checkpoint will carry, so chunk_size_bytes
  // bounds whole chunks, not just their events.
  uint64_t pending_pool_bytes_ = 0;

  // The JDK's tick -> time conversion of the first chunk (JDK 25 uses it for every chunk).
  uint64_t file_start_ticks_ = 0;
  int64_t file_start_nanos_ = 0;
  double ticks_per_nano_ = 1;

  // Recording-wide state.
  Counters counters_;
  uint64_t chunks_finished_ = 0;
  uint32_t repository_sequence_ = 0;
  std::deque<ChunkFile> finished_files_;
  uint64_t finished_files_bytes_ = 0;

  StringTable symbols_;
  StringTable packages_;  // package name -> key; the name's symbol is package_symbols_
  std::vector<uint32_t> package_symbols_;
  StringTable class_names_;
  std::vector<Class> classes_;
  StringTable method_names_;  // "class\0name\0descriptor" -> key
  std::vector<Method> methods_;
  std::vector<Stack> stacks_;
  std::vector<Frame> frames_;
  std::vector<StackSlot> stack_table_;  // live stacks, open addressing, at most half full
  size_t live_stacks_ = 0;
  std::vector<FrameSlot> frame_cache_;  // open addressing, at most half full
  size_t cached_frames_ = 0;
  std::vector<Thread> threads_;
  std::unordered_map<int32_t, ThreadSlot> thread_slots_;  // by kernel tid

  PoolState symbol_pool_, package_pool_, class_pool_, method_pool_, stack_pool_, thread_pool_,
      string_pool_;
  ResolvedFrame resolved_frame_;
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_RECORDING_JFR_WRITER_H_
