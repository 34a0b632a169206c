// JfrWriter: turns a session's SampleRecords into a JFR recording readable by JDK 17 and JDK 25
// `jfr`, JMC and our JfrReader (docs/JFR.md). It orchestrates pieces that each own one concern:
//
//   JfrChunkWriter (profiler/jfr/)  chunk files, headers, flush/rotation deadlines, retention
//   EventEncoder                    the bytes of each ctxprof event
//   ThreadPool, StackPool,          the constant pools, keys stable for the whole recording
//   MethodPool, AttributeValuePool  (readers cache entries across chunks by key); every chunk
//                                   re-emits the entries its events use
//   ContextRuns, ContextIds         ctxprof.Context intervals of same-context runs; contextIds
//
// A chunk, in file order: header, metadata (jfr_metadata.h; identical in every chunk),
// jdk.ActiveSetting events and a ctxprof.ProfilerSettings event, then segments (sample and
// ctxprof.Context events followed by one checkpoint, flush bit set, with every pool entry those
// events reference that the chunk has not carried yet), and at chunk end a
// ctxprof.ProfilerCounters event and a last checkpoint. In file mode (path) a flush ends the
// chunk (none without a sample), so the file always consists of finished chunks, which Close
// folds into one (CompactRecordingFile). In repository mode a flush publishes a segment.
//
// Events (fields and the reader-by-reader trade-offs: docs/JFR.md, "Event types"):
//  * kCpu  -> jdk.ExecutionSample (cpu_samples = kJdk, the default) or ctxprof.CpuSample (kCtxprof:
//             has an eventThread, which JDK 25's `jfr print` needs to attach contexts).
//  * kWall -> profiler.WallClockSample (wall_samples = kProfiler, the default) or
//             jdk.NativeMethodSample (kJdk: jfrview and speedscope read only the JDK's samples).
//  * kAllocation, kMonitorEnter, kThreadPark (profiler/sampler/event_recorder.h) ->
//             jdk.ObjectAllocationSample, jdk.JavaMonitorEnter, jdk.ThreadPark, the JDK's layouts;
//             class ids are names in inputs.class_names (null: every class written as null). A
//             wait's [start, end] feeds ContextRuns: it joins its context by its start and its end.
//  * context_id adds a trailing contextId to every sample and runtime event.
//  * pyroscope (upload=): what Pyroscope's parser reads right (docs/JFR.md, "Pyroscope"):
//    allocations as jdk.ObjectAllocationInNewTLAB, a wall sample of weight N > 1 as N - 1 then 1
//    (the parser weighs the next events by it), a clock in nanoseconds (Open checks it).
//  * live (inputs.objects): the writer owns the object reference of every allocation record it
//    is given (LiveObjects); at Close each sampled object still alive becomes a
//    profiler.LiveObject in the last chunk, dated when sampled (so it joins its context).
//
// Failure: the first I/O error stops the writer (every later call returns that Status); the chunk
// being written keeps its "unfinished" header, and chunks finished before stay valid.
//
// Thread safety: NOT thread-safe. One thread (the session's background thread) creates
// the writer and makes every call. Resolvers are called from that thread.
#ifndef CTXPROF_PROFILER_JFR_EVENTS_JFR_WRITER_H_
#define CTXPROF_PROFILER_JFR_EVENTS_JFR_WRITER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "context/attribute_registry.h"
#include "context/dictionary.h"
#include "profiler/base/status.h"
#include "profiler/export/finished_chunk.h"
#include "profiler/jfr/jfr_buffer.h"
#include "profiler/jfr/jfr_chunk_writer.h"
#include "profiler/jfr_events/attribute_value_pool.h"
#include "profiler/jfr_events/context_ids.h"
#include "profiler/jfr_events/context_runs.h"
#include "profiler/jfr_events/event_encoder.h"
#include "profiler/jfr_events/frame_resolver.h"
#include "profiler/jfr_events/live_objects.h"
#include "profiler/jfr_events/method_pool.h"
#include "profiler/jfr_events/span_intervals.h"
#include "profiler/jfr_events/span_latencies.h"
#include "profiler/jfr_events/stack_pool.h"
#include "profiler/jfr_events/thread_pool.h"
#include "profiler/sampler/clock.h"
#include "profiler/sampler/sample.h"

namespace ctxprof {

enum class CpuSampleEvent : uint8_t {
  kJdk = 0,      // jdk.ExecutionSample
  kCtxprof = 1,  // ctxprof.CpuSample (has eventThread, so JDK 25 shows Context lines)
};

enum class WallSampleEvent : uint8_t {
  kProfiler = 0,  // profiler.WallClockSample (async-profiler's converter, Pyroscope)
  kJdk = 1,       // jdk.NativeMethodSample (jfrview, speedscope)
};

// Settings of one recording. The option parser (owned by the sampler) fills it.
struct JfrWriterConfig {
  // Exactly one of the two: a single file that receives every chunk, or a repository folder
  // that receives one file per chunk (see JfrChunkConfig).
  std::string path;
  std::string repository;

  CpuSampleEvent cpu_samples = CpuSampleEvent::kJdk;
  WallSampleEvent wall_samples = WallSampleEvent::kProfiler;
  bool context_id = false;                     // sample events end with contextId (JfrEventLayout)
  bool pyroscope = false;                      // upload=: Pyroscope's layout (file comment)
  uint64_t chunk_size_bytes = 0;               // 0 = no size limit
  uint64_t chunk_time_nanos = 0;               // 0 = no time limit
  uint64_t flush_interval_nanos = 1000000000;  // 0 = flush only at chunk end
  uint64_t max_size_bytes = 0;          // repository mode: total of finished chunk files; 0 = none
  uint64_t max_age_nanos = 0;           // repository mode: age of a finished chunk's end; 0 = none
  size_t write_buffer_bytes = 1 << 20;  // events are appended to the file in blocks this large
  // Stack deduplication keeps every stack's frames. When they exceed this at a rotation, the
  // stacks the finished chunk did not use are dropped (StackPool::DropUnused). Without rotation
  // nothing is dropped.
  uint64_t stack_cache_bytes = 64 << 20;

  // Self-description, written as ctxprof.ProfilerSettings at the start of every chunk.
  // Also written as async-profiler's jdk.ActiveSetting `event`, `interval` and `wall`.
  // The engines really used, e.g. "cpu+wall", "ctimer", "wall"; "" with runtime events only.
  std::string engine;
  // The CPU interval (the wall interval if no CPU engine runs; 0 if neither does).
  uint64_t interval_nanos = 0;
  uint64_t wall_interval_nanos = 0;  // 0 = no wall sampling
  std::string fallbacks;  // e.g. "perf_events unavailable (EACCES) -> ctimer"; may be empty
  int32_t stack_depth = kDefaultStackDepth;
  // Also written as ctxprof.ProfilerSettings and async-profiler's `alloc` and `lock` settings.
  uint64_t alloc_interval_bytes = 0;  // alloc=; 0 = none
  int64_t lock_threshold_nanos = -1;  // lock=; -1 = none
  bool select_if_context = false;     // select=if-context
  // contexts=all: every timed span becomes a ctxprof.Context event, not only those in which a
  // recorded event falls (contexts=triggered, the default).
  bool all_contexts = false;
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
  // Class names of runtime events (event.class_id); may be null.
  const Dictionary* class_names = nullptr;
  // The live option's object references (event.object_ref); null when off.
  ObjectTracker* objects = nullptr;
  // Repository mode: called on the writer's thread for each finished chunk file, with its
  // contexts; may be empty. Must not block (an uploader queues the chunk and returns).
  std::function<void(FinishedChunk&&)> on_chunk_finished;
  // Spans dropped because a thread's span log was full (ctxprof.ProfilerCounters); may be empty.
  std::function<uint64_t()> dropped_spans;
  // Chunks uploaded and uploads given up so far (ctxprof.ProfilerCounters); may be empty.
  std::function<std::pair<uint64_t, uint64_t>()> upload_counts;
  // Repository mode, jfrsync= (jni/jfr_sync.h): another recorder whose events each chunk file
  // also carries, for the chunk's own period. A rotation asks request_period_boundary to rotate
  // that recorder (it works in the background); period_boundary then says 0 while it does,
  // the boundary tick once it has, kPeriodBoundaryFailed (the chunk ends now, without the other
  // recorder's events) or kNoMorePeriods (it has ended: the chunk in progress is the last). The
  // chunk ends at the boundary (EndPeriod), and end_period appends the other recorder's events
  // up to it to the finished chunk file (`last`: all it holds, at Close) before the file is
  // reported. All empty, or all set; they report their own failures.
  std::function<void()> request_period_boundary;
  std::function<uint64_t()> period_boundary;
  static constexpr uint64_t kNoMorePeriods = UINT64_MAX;
  static constexpr uint64_t kPeriodBoundaryFailed = UINT64_MAX - 1;
  std::function<void(const std::string& path, bool last)> end_period;
};

// Folds the finished chunks of the recording file `path` (file mode, or a dump) into one chunk
// per run that starts at an offset in `chunk_starts` (CompactChunks, profiler/jfr/jfr_copy.h):
// the run's first settings events, its last counters, every other event, each pool entry once;
// a file that becomes one chunk gets its method, class, package and symbol pools packed (keys by
// use: JfrCompactOptions).
Status CompactRecordingFile(const std::string& path, const std::vector<uint64_t>& chunk_starts);

class JfrWriter {
 public:
  // Validates `config` (with pyroscope, the clock must tick in nanoseconds), creates the file (or
  // the repository folder, 0700, and the first chunk file) and writes the first chunk's header and
  // metadata. Fails with kInvalidArgument for a bad config, kIo with the errno of the failed file
  // or folder call.
  static StatusOr<std::unique_ptr<JfrWriter>> Open(const JfrWriterConfig& config,
                                                   const JfrWriterInputs& inputs);
  ~JfrWriter();
  JfrWriter(const JfrWriter&) = delete;
  JfrWriter& operator=(const JfrWriter&) = delete;

  // Adds one sample or runtime event (and takes its object reference, if any, even when it
  // fails). Records of one thread should arrive in tick order. May flush or rotate.
  Status Add(const SampleRecord& sample);
  // Timed spans (SpanIntervals): the threads whose contexts are timed, then each closed span in
  // the session clock, in its thread's order. Records of timed threads join these spans; those
  // of other threads form runs of same-context samples (ContextRuns).
  void AddTimedThreads(const std::unordered_set<int32_t>& tids) { spans_.AddTimedThreads(tids); }
  // Each closed span also counts in its attribute values' latency histogram (SpanLatencies).
  void AddSpan(const SpanInterval& span) {
    latencies_.Add(span);
    spans_.Add(span);
  }
  // Thread `tid`'s interval still open at `read_ticks` began at `begin_ticks` with `context`,
  // run by `virtual_thread_id` (0: the thread itself).
  void SetOpenSpan(int32_t tid, uint64_t virtual_thread_id, uint64_t begin_ticks,
                   uint64_t read_ticks, const ContextSnapshot& context) {
    latencies_.SetOpen(tid, virtual_thread_id, context);
    spans_.SetOpen(tid, virtual_thread_id, begin_ticks, read_ticks, context);
  }
  // Every record up to `horizon` has been added: spans ending by then are decided.
  void SettleSpans(uint64_t horizon) { spans_.Settle(horizon, &pending_pool_bytes_); }
  uint64_t spans_written() const { return spans_.spans_written(); }

  // Time-based work (periodic flush, chunk_time rotation, max_age retention). Add() does it
  // too; call this when no samples arrive, at least once per flush interval.
  Status Tick();
  // Publishes everything added so far: after it returns ok, a reader sees every sample. In
  // file mode this ends the chunk (when it holds a sample), and the next continues it: Close
  // folds them into one.
  Status Flush();
  // Like Flush, and in repository mode also finishes the chunk file (when it holds a sample):
  // afterwards published() covers every sample added so far.
  Status Publish();
  // What readers can read now (JfrChunkWriter::published).
  std::vector<JfrChunkWriter::Published> published() const { return chunk_->published(); }
  // Ends the current chunk and starts the next one (which Close does not fold into it). With
  // request_period_boundary, only asks for the boundary: the caller ends the chunk at
  // PollBoundary() with EndPeriod once every record before it has been added.
  Status Rotate();
  // The tick at which the chunk is to end (period_boundary), 0 when none is known (yet).
  uint64_t PollBoundary();
  // True while a boundary was asked for and PollBoundary() has not said it yet.
  bool boundary_under_way() const { return boundary_requested_ && boundary_ticks_ == 0; }
  // The latest tick the records added and the spans settled may reach meanwhile: just before
  // the boundary once known; while it is under way, the moment it was asked for (it can be no
  // earlier); else UINT64_MAX.
  uint64_t HorizonLimit() const {
    return boundary_ticks_ != 0  ? boundary_ticks_ - 1
           : boundary_requested_ ? boundary_requested_at_
                                 : UINT64_MAX;
  }
  // Ends the chunk at PollBoundary(): each span still open there is written up to it and
  // goes on from it in the next chunk (SpanIntervals::CutAt). Records before the boundary and
  // SettleSpans(boundary) must come first.
  Status EndPeriod();
  // Finishes the recording (last chunk gets the final flag) and closes it; in file mode the
  // chunks are then folded into one (CompactRecordingFile; if that fails, the file keeps its
  // chunks, complete, and Close says why). Idempotent; the destructor calls it, so a writer never
  // leaves a chunk unfinished on a normal shutdown.
  Status Close();

  // Totals, for tests and for the counters event.
  uint64_t samples_written() const { return counters_.samples; }
  uint64_t events_written() const {
    return counters_.allocation_samples + counters_.monitor_enters + counters_.thread_parks;
  }
  uint64_t chunks_finished() const { return chunk_->chunks_finished(); }
  // Frames kept for stack deduplication (see stack_cache_bytes).
  size_t cached_stack_frames() const { return stacks_.cached_frames(); }
  // Repository mode: the finished chunk files still present, oldest first.
  std::vector<std::string> finished_chunk_files() const { return chunk_->finished_chunk_files(); }

 private:
  // The session's clock as the chunk writer's time base.
  class ChunkClock : public JfrClock {
   public:
    explicit ChunkClock(const Clock* clock) : clock_(clock) {}
    uint64_t Now() const override { return clock_->Now(); }
    uint64_t TicksPerSecond() const override { return clock_->TicksPerSecond(); }
    int64_t EpochNanosAt(uint64_t ticks) const override { return clock_->EpochNanosAt(ticks); }

   private:
    const Clock* const clock_;
  };
  struct Counters {
    uint64_t samples = 0;  // cpu and wall
    uint64_t cpu_samples = 0;
    uint64_t wall_samples = 0;
    uint64_t allocation_samples = 0;
    uint64_t monitor_enters = 0;
    uint64_t thread_parks = 0;
    uint64_t live_objects = 0;
    uint64_t context_busy = 0;
    uint64_t context_torn = 0;
    uint64_t truncated_stacks = 0;
  };

  JfrWriter(const JfrWriterConfig& config, const JfrWriterInputs& inputs,
            std::unique_ptr<ChunkClock> chunk_clock, std::unique_ptr<JfrChunkWriter> chunk);
  // Keeps the first failure, which every later call returns.
  Status Fail(Status status);
  Status StartChunk();
  void WriteActiveSettings();
  // Hands chunk number `chunk`, just finished, to inputs_.on_chunk_finished with the contexts
  // its events used (none when no event of it had a context).
  void ReportFinishedChunk(uint32_t chunk);
  // Ends the segment: open context runs, the counters event at a chunk end, the checkpoint,
  // then the chunk writer publishes it.
  Status WriteSegment(JfrChunkWriter::SegmentEnd end);
  // WriteSegment(end) of a chunk end, then the next chunk.
  Status EndChunk(JfrChunkWriter::SegmentEnd end);
  void WriteCheckpoint();
  // Acts on what the chunk writer says is due at `now_ticks`.
  Status DoWhatIsDue(uint64_t now_ticks);
  // The contextId of a record covering [start_ticks, record.ticks]: its timed span's, or its
  // run's (ContextRuns) for a thread whose contexts are not timed and for a virtual thread.
  uint64_t JoinContext(const SampleRecord& record, uint32_t thread_key, uint64_t start_ticks);
  // Encode a CPU or wall sample / a runtime event, after following its context.
  void AppendSample(const SampleRecord& sample, uint32_t thread_key, uint32_t stack_key);
  void AppendRuntimeEvent(const SampleRecord& event, uint32_t thread_key, uint32_t stack_key);
  // The Class pool key of class-name id `class_id`, queued for the current chunk; 0 for none.
  uint32_t ClassKeyOf(uint32_t class_id);
  // Writes the live objects (live option) before the last segment.
  void WriteLiveObjects();
  // Before a chunk begins: takes the names registered since the last (a tracer's ContextSetter
  // after an agent's start), so that this chunk's metadata, Context events and latency groups
  // have their fields, and starts a new run of the fold.
  void AdoptNewAttributes();

  const JfrWriterConfig config_;
  const JfrWriterInputs inputs_;
  // The registered names when the recording started, or at the last chunk start that found more
  // (AdoptNewAttributes).
  std::vector<std::string> attribute_names_;
  uint32_t attribute_generation_ = 0;  // adoptions so far (JfrEventLayout)
  // The metadata's declarations (JfrMetadata::SerializeDeclarations), made for the first chunk
  // and repeated in every later one until the names change: they depend only on config_ and
  // attribute_names_.
  JfrBuffer metadata_declarations_;
  bool closed_ = false;
  Status failure_;  // the first failure; ok while there is none

  const std::unique_ptr<ChunkClock> chunk_clock_;  // the time base of chunk_
  const std::unique_ptr<JfrChunkWriter> chunk_;
  EventEncoder encoder_;
  MethodPool methods_;
  StackPool stacks_;
  ThreadPool threads_;
  AttributeValuePool values_;
  ContextIds context_ids_;
  ContextRuns runs_;
  SpanIntervals spans_;
  SpanLatencies latencies_;
  std::vector<uint32_t> class_keys_;   // class-name id -> Class pool key (0 = not yet interned)
  std::unique_ptr<LiveObjects> live_;  // live option; else null
  // Estimated size of the pool entries the next checkpoint will carry, so chunk_size_bytes
  // bounds whole chunks, not just their events.
  uint64_t pending_pool_bytes_ = 0;
  uint64_t samples_in_chunk_ = 0;
  bool boundary_requested_ = false;     // request_period_boundary called, no EndPeriod yet
  uint64_t boundary_requested_at_ = 0;  // the clock then
  uint64_t boundary_ticks_ = 0;         // PollBoundary()
  bool period_recorder_ended_ = false;  // period_boundary said kNoMorePeriods
  Counters counters_;
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_JFR_EVENTS_JFR_WRITER_H_
