// JfrReader: parses JFR recordings (ours and the JDK's) into events with resolved values.
//
// The reader is for tests and for the ctxprof tools (report, flame graph, pprof): it loads a
// whole file into memory, walks every chunk (header, metadata, the checkpoint chain, then the
// records), and resolves constant-pool references, so an event's `stackTrace` field is the
// stack-trace object with its frames, methods, classes and strings.
//
// Robustness contract: any input (truncated, corrupt, random) yields either a parse or an
// error message that names the file and the offset, never a crash, hang or an allocation that
// is not bounded by the input size: every count and size is checked against the bytes that
// remain, every loop advances, nesting is limited.
//
// Unfinished chunks (generation byte != 0, e.g. a writer killed mid-recording) are rejected
// unless Options::allow_unfinished_chunks is set; then the reader takes the header as last
// published (size, metadata, checkpoints) like a JDK streaming reader, and reads up to there,
// and a locked chunk (generation 255) after readable ones ends the file (met_locked_header()),
// unless Options::read_locked_chunks says its writer is gone.
//
// Thread safety: a JfrReader is immutable after Read() returns; values share immutable
// objects, so const access from several threads is safe.
#ifndef CTXPROF_PROFILER_JFR_JFR_READER_H_
#define CTXPROF_PROFILER_JFR_JFR_READER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/base/status.h"
#include "profiler/jfr/jfr_chunk_header.h"
#include "profiler/jfr/jfr_value.h"

namespace ctxprof {

struct JfrChunkInfo {
  uint64_t file_offset = 0;
  uint64_t size = 0;
  int64_t start_nanos = 0;
  uint64_t duration_nanos = 0;
  uint64_t start_ticks = 0;
  uint64_t ticks_per_second = 0;
  uint8_t generation = 0;
  uint16_t flags = 0;  // kChunkFlagFinal: the last chunk of a recording
  uint64_t metadata_id = 0;
};

struct JfrEvent {
  const JfrClass* type = nullptr;
  uint32_t chunk = 0;        // index into JfrReader::chunks()
  uint64_t file_offset = 0;  // of the record
  JfrValue value;            // object of `type`: fields in declaration order

  const std::string& type_name() const { return type->name; }
  int64_t start_ticks() const { return value.items().empty() ? 0 : value.items()[0].integer(); }
  const JfrValue& Field(std::string_view name) const { return value.Field(name); }
  // The event's thread: `eventThread`, or `sampledThread` (jdk.ExecutionSample); null if none.
  const JfrValue& thread() const;
  // A ctxprof.Context's W3C trace id (32 lowercase hex digits) and span id (16), "" for none:
  // from its binary fields (traceIdHigh, traceIdLow, spanId; 0 = none), or the hex strings
  // (traceId, spanId; null = none) of recordings written before them.
  std::string TraceId() const;
  std::string SpanId() const;
};

// A frame of a jdk.types.StackTrace, flattened.
struct JfrFrame {
  std::string class_name;  // as written (HotSpot: internal form with '/')
  std::string method_name;
  std::string descriptor;
  int32_t line_number = 0;
  int32_t bytecode_index = 0;
  std::string type;  // "Interpreted", "JIT compiled", "Native", ...
};

class JfrReader {
 public:
  struct Options {
    bool allow_unfinished_chunks = false;
    // With allow_unfinished_chunks, for a file whose writer is gone (killed): a chunk whose
    // header stayed locked (generation 255) is read as its header says. A writer patches the
    // fields only after the bytes they cover are in the file, so a dead writer's locked header
    // names published bytes: its last flush's or the one it was publishing. Never for a file
    // whose writer may still run: read again a little later instead (met_locked_header()).
    bool read_locked_chunks = false;
    // > 0: only the first `leading_fields` fields of each event are decoded, the rest skipped
    // (Field() of a later one is null). startTime, duration and the thread lead in the JDK's and
    // ctxprof's layouts, so a reader that needs only those (jfr_append.h) saves the values and
    // the stack of every event.
    size_t leading_fields = 0;
    // When set, each event is handed to it as it is parsed, in file order, and kept in events()
    // only if it returns true: a reader that needs each event once (jfr_append.h) keeps none.
    // ContextAt joins the kept ctxprof.Context events only.
    std::function<bool(const JfrEvent&)> on_event;
  };

  // Reads and parses `path`. Fails with kIo (and the errno) when the file cannot be read, and
  // kInvalidArgument naming the path and offset when it is not a readable recording.
  Status Read(const std::string& path, const Options& options);
  // A chunk header was locked (generation 255: being rewritten, or a chunk being appended) at
  // that very moment, so reading again a little later can give more. Without
  // allow_unfinished_chunks the read failed there; with it, a locked chunk after at least one
  // readable chunk ends the read successfully with the chunks before it.
  bool met_locked_header() const { return met_locked_header_; }
  // Parses bytes in memory; `name` is used in error messages.
  Status Parse(const std::string& name, std::vector<uint8_t> bytes, const Options& options);

  const std::vector<JfrChunkInfo>& chunks() const { return chunks_; }
  const std::vector<JfrEvent>& events() const { return events_; }
  // Records whose type the chunk's metadata does not declare (skipped, like the JDK does).
  uint64_t unknown_records() const { return unknown_records_; }

  // Converts ticks to nanoseconds since the epoch like JDK 25 does: with the first chunk's
  // header for every chunk, in Java long arithmetic (sums wrap, out-of-range quotients
  // saturate), so any value a file holds converts without undefined behaviour. `chunk`: the
  // event's chunk; one on another clock than the first chunk (a concatenated JDK recording,
  // see ContextAt) converts with the first chunk of its own clock instead.
  int64_t EpochNanosOf(int64_t ticks, uint32_t chunk = 0) const;
  // Converts a tick duration to nanoseconds (JDK rule: truncation; saturates like Java).
  int64_t NanosOf(int64_t ticks) const;

  // The frames of a stack trace value (leaf first).
  static std::vector<JfrFrame> FramesOf(const JfrValue& stack_trace);

  // The identity a sample and its context are joined on: the thread's osThreadId, or for a
  // virtual thread (osThreadId 0, as JDK 25 writes it) its javaThreadId, negated.
  static int64_t ThreadKey(const JfrValue& thread);
  // The ctxprof.Context event of the thread with ThreadKey `thread_key` whose
  // [startTime, startTime + duration) contains `ticks`, or nullptr: the join of a sample to its
  // context. Intervals of a thread do not overlap (docs/JFR.md); if a file has overlapping ones,
  // the latest-starting wins. `ticks` counts on the clock of chunk `chunk` (the event's): the
  // contexts of chunks on that clock are joined in ticks, exactly; those of a chunk on another
  // clock (a file that concatenates the JDK's recording, in nanosecond ticks, with ours, in TSC
  // ticks) through epoch nanoseconds, each chunk converted with its own header, so the join
  // is as close as the two writers' clocks agree. With `span_nanos`, also the length of the
  // whole span, which a writer may have cut into parts at flushes and chunk ends (docs/JFR.md,
  // "How the tool joins events to spans"): from the first to the last interval of the thread
  // with the same trace and span id when it has one, else the interval joined with its abutting
  // neighbours of the same context (every field but startTime, duration, eventThread and
  // contextId equal). The one join of an event to its context, for every type.
  const JfrEvent* ContextAt(int64_t thread_key, int64_t ticks, int64_t* span_nanos = nullptr,
                            uint32_t chunk = 0) const;

 private:
  class ChunkParser;

  std::vector<uint8_t> bytes_;
  std::vector<JfrChunkInfo> chunks_;
  std::vector<std::unique_ptr<std::vector<JfrClass>>> metadata_;  // stable JfrClass pointers
  std::vector<JfrEvent> events_;
  uint64_t unknown_records_ = 0;
  bool met_locked_header_ = false;
  struct ContextInterval {
    int64_t start_ticks;
    int64_t end_ticks;
    size_t event;  // index into events_
    // The whole span's [start, end): this interval joined with the other parts of its span.
    int64_t span_start_ticks;
    int64_t span_end_ticks;
  };
  // Sets span_start_ticks and span_end_ticks of one thread's intervals, sorted by start.
  void JoinSpanParts(std::vector<ContextInterval>* intervals) const;
  // (clock domain, ThreadKey) -> the thread's ctxprof.Context intervals on that clock, sorted by
  // start.
  std::map<std::pair<uint32_t, int64_t>, std::vector<ContextInterval>> contexts_;
  // Clock domains: chunks whose ticks count on one clock (the same rate, and headers whose
  // (ticks, epoch nanos) anchors agree within a millisecond). Per chunk its domain, per domain
  // its first chunk.
  std::vector<uint32_t> chunk_domain_;
  std::vector<uint32_t> domain_anchor_;
  void FindClockDomains();
  // `ticks` of chunk `chunk`'s clock on domain `domain`'s clock, through epoch nanoseconds.
  int64_t TicksOnDomain(uint32_t chunk, int64_t ticks, uint32_t domain) const;
  const ContextInterval* IntervalAt(uint32_t domain, int64_t thread_key, int64_t ticks) const;
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_JFR_JFR_READER_H_
