// EventEncoder: the bytes of ctxprof's events, in the field order jfr_metadata.h declares them.
//
//   sample     jdk.ExecutionSample / jdk.NativeMethodSample {startTime, sampledThread,
//              stackTrace, state} (the JDK's exact layout, which async-profiler's converter reads
//              field by field), profiler.WallClockSample {startTime, eventThread, stackTrace,
//              state, samples, timeSpan} or ctxprof.CpuSample {startTime, eventThread,
//              stackTrace, state, weight}
//   allocation jdk.ObjectAllocationSample {startTime, eventThread, stackTrace, objectClass, weight}
//              or, with the layout's tlab_allocations, jdk.ObjectAllocationInNewTLAB {startTime,
//              eventThread, stackTrace, objectClass, allocationSize, tlabSize = the weight}
//   wait       jdk.JavaMonitorEnter {startTime, duration, eventThread, stackTrace, monitorClass,
//              previousOwner, address} or jdk.ThreadPark {startTime, duration, eventThread,
//              stackTrace, parkedClass, timeout, until, address}: the JDK's exact layouts
//   live       profiler.LiveObject {startTime, eventThread, stackTrace, objectClass,
//              allocationSize, allocationTime}: async-profiler's layout
//   Sample, allocation, wait and live events end with contextId when the layout has it
//   (PutContextId).
//   context    ctxprof.Context {startTime, duration, eventThread, contextId (with the layout's
//              context_id), traceIdHigh, traceIdLow, spanId, attributes...}
//   latency    ctxprof.SpanLatency {startTime, duration, spans, totalDuration, maxDuration,
//              bucketDeltas, attributes...}
//   setting    jdk.ActiveSetting {startTime, id, name, value}, at the start of every chunk
//   settings   ctxprof.ProfilerSettings, at the start of every chunk
//   counters   ctxprof.ProfilerCounters, at the end of every chunk
// Pool references (thread, stack, state, attribute values) are keys the caller got from the
// pools; the encoder only lays out bytes.
//
// Weight: jdk.ExecutionSample and jdk.NativeMethodSample have no weight field and every reader
// counts each as one sampling interval, so a sample that stands for N intervals is written as N
// identical events; the other sample events carry N in their weight field (`samples`, `weight`).
//
// Thread safety: none; owned by the JFR writer's thread.
#ifndef CTXPROF_PROFILER_JFR_EVENTS_EVENT_ENCODER_H_
#define CTXPROF_PROFILER_JFR_EVENTS_EVENT_ENCODER_H_

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "context/context_block.h"
#include "profiler/base/latency_histogram.h"
#include "profiler/jfr/jfr_buffer.h"
#include "profiler/jfr/jfr_metadata.h"

namespace ctxprof {

struct SampleEventFields {
  uint32_t type;  // kJfrTypeExecutionSample, kJfrTypeWallClockSample, kJfrTypeNativeMethodSample
                  // or kJfrTypeCpuSample
  uint64_t ticks;
  uint32_t thread_key;
  uint32_t stack_key;
  uint32_t state_key;
  uint32_t weight;      // sampling intervals, >= 1
  uint64_t context_id;  // 0 = no context; written only when the layout has contextId
};

struct AllocationEventFields {
  uint64_t ticks;
  uint32_t thread_key;
  uint32_t stack_key;
  uint32_t class_key;     // 0 = null
  uint64_t weight;        // bytes this sample stands for
  uint64_t object_bytes;  // the sampled object's size (allocationSize of the TLAB layout)
  uint64_t context_id;    // 0 = no context; written only when the layout has contextId
};

// jdk.JavaMonitorEnter (type kJfrTypeJavaMonitorEnter) or jdk.ThreadPark (kJfrTypeThreadPark).
struct WaitEventFields {
  uint32_t type;
  uint64_t start_ticks;
  uint64_t duration_ticks;
  uint32_t thread_key;
  uint32_t stack_key;
  uint32_t class_key;     // monitorClass / parkedClass; 0 = null
  int64_t timeout_nanos;  // ThreadPark: INT64_MIN = none (the JDK's value for "no timeout")
  int64_t until_millis;   // ThreadPark: INT64_MIN = none
  uint64_t context_id;    // as in AllocationEventFields
};

// profiler.LiveObject (live option).
struct LiveObjectFields {
  uint64_t allocation_ticks;  // written as startTime and allocationTime
  uint32_t thread_key;
  uint32_t stack_key;
  uint32_t class_key;
  uint64_t object_bytes;
  uint64_t context_id;  // of the allocation's context, in this chunk
};

struct ContextEventFields {
  uint64_t start_ticks;
  uint64_t duration_ticks;
  uint32_t thread_key;
  uint64_t context_id;
  const ContextSnapshot* context;  // attribute ids are the String pool keys
  size_t attribute_count;          // registered attribute slots, each a field
};

// One ctxprof.SpanLatency: the spans of one attribute-value set that closed in
// [start_ticks, start_ticks + duration_ticks], as a LatencyHistogram.
struct SpanLatencyFields {
  uint64_t start_ticks;
  uint64_t duration_ticks;
  const LatencyHistogram* histogram;  // in nanoseconds
  const uint32_t* attributes;         // String pool keys (Dictionary ids), 0 = unset
  size_t attribute_count;
};

// One jdk.ActiveSetting: `name` = `value` for the events of type `event_type`.
struct ActiveSettingFields {
  uint64_t ticks;
  uint32_t event_type;
  std::string name;
  std::string value;
};

struct SettingsEventFields {
  uint64_t ticks;
  std::string engine;
  uint64_t interval_nanos;
  std::string fallbacks;
  std::string clock;
  uint64_t ticks_per_second;
  std::string cpu_samples;  // "jdk" or "ctxprof"
  int32_t stack_depth;
  std::string attributes;         // the attribute names, comma-separated
  uint64_t alloc_interval_bytes;  // 0 = no allocation sampling
  int64_t lock_threshold_nanos;   // -1 = no lock events
  std::string select;             // "all" or "if-context"
  std::string version;            // the ctxprof release that wrote the recording
};

// ctxprof.ProfilerCounters' fields after startTime, in order.
struct CounterEventFields {
  uint64_t ticks;
  uint64_t samples;
  uint64_t cpu_samples;
  uint64_t wall_samples;
  uint64_t dropped_samples;
  uint64_t context_busy;
  uint64_t context_torn;
  uint64_t truncated_stacks;
  uint64_t dictionary_overflows;
  uint64_t truncated_values;
  uint64_t uploaded_chunks;
  uint64_t dropped_uploads;
  uint64_t allocation_samples;
  uint64_t monitor_enters;
  uint64_t thread_parks;
  uint64_t live_objects;
  uint64_t untracked_objects;
  uint64_t timed_spans;    // ctxprof.Context events written from timed spans
  uint64_t dropped_spans;  // spans lost because a thread's span log was full
};

class EventEncoder {
 public:
  // The recording's layout (jfr_metadata.h), as its metadata declares it.
  explicit EventEncoder(const JfrEventLayout& layout) : layout_(layout) {}

  void AppendSample(const SampleEventFields& fields, JfrBuffer* out);
  void AppendAllocation(const AllocationEventFields& fields, JfrBuffer* out);
  void AppendWait(const WaitEventFields& fields, JfrBuffer* out);
  void AppendLiveObject(const LiveObjectFields& fields, JfrBuffer* out);
  void AppendContext(const ContextEventFields& fields, JfrBuffer* out);
  void AppendSpanLatency(const SpanLatencyFields& fields, JfrBuffer* out);
  void AppendActiveSetting(const ActiveSettingFields& fields, JfrBuffer* out);
  void AppendSettings(const SettingsEventFields& fields, JfrBuffer* out);
  void AppendCounters(const CounterEventFields& fields, JfrBuffer* out);
  // At a chunk start whose metadata declares a later attribute generation (JfrEventLayout).
  void set_attribute_generation(uint32_t generation) { layout_.attribute_generation = generation; }

  // The trailing contextId of an event whose type declares it (with the layout's context_id):
  // appends `context_id` when the layout has the field, nothing otherwise.
  void PutContextId(uint64_t context_id, JfrBuffer* out) const {
    if (layout_.context_id) out->PutVarint(context_id);
  }

 private:
  // A record of `type` whose fields are all varints, ending with PutContextId(*context_id)
  // when `context_id` is given (an event type that declares contextId).
  void AppendVarints(uint32_t type, std::initializer_list<uint64_t> fields,
                     std::optional<uint64_t> context_id, JfrBuffer* out);

  JfrEventLayout layout_;
  JfrBuffer scratch_;  // a record's body before its size is known
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_JFR_EVENTS_EVENT_ENCODER_H_
