// EventEncoder: the bytes of ctxprof's events, in the field order jfr_metadata.h declares them.
//
//   sample     jdk.ExecutionSample {startTime, sampledThread, stackTrace, state} (the JDK's exact
//              layout, which async-profiler's converter reads field by field), or
//              ctxprof.WallClockSample / ctxprof.CpuSample {startTime, eventThread, stackTrace,
//              state, weight}
//   allocation jdk.ObjectAllocationSample {startTime, eventThread, stackTrace, objectClass, weight}
//   wait       jdk.JavaMonitorEnter {startTime, duration, eventThread, stackTrace, monitorClass,
//              previousOwner, address} or jdk.ThreadPark {startTime, duration, eventThread,
//              stackTrace, parkedClass, timeout, until, address}: the JDK's exact layouts
//   live       profiler.LiveObject {startTime, eventThread, stackTrace, objectClass,
//              allocationSize, allocationTime}: async-profiler's layout
//   context    ctxprof.Context {startTime, duration, eventThread, traceId, spanId, attributes...}
//   settings   ctxprof.ProfilerSettings, at the start of every chunk
//   counters   ctxprof.ProfilerCounters, at the end of every chunk
// Pool references (thread, stack, state, attribute values) are keys the caller got from the
// pools; the encoder only lays out bytes.
//
// Thread safety: none; owned by the JFR writer's thread.
#ifndef CTXPROF_PROFILER_RECORDING_EVENT_ENCODER_H_
#define CTXPROF_PROFILER_RECORDING_EVENT_ENCODER_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "context/context_block.h"
#include "profiler/jfr/jfr_buffer.h"

namespace ctxprof {

struct SampleEventFields {
  uint32_t type;  // kJfrTypeExecutionSample, kJfrTypeWallClockSample or kJfrTypeCpuSample
  uint64_t ticks;
  uint32_t thread_key;
  uint32_t stack_key;
  uint32_t state_key;
  uint32_t weight;  // written by the ctxprof types only
};

struct AllocationEventFields {
  uint64_t ticks;
  uint32_t thread_key;
  uint32_t stack_key;
  uint32_t class_key;  // 0 = null
  uint64_t weight;     // bytes
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
};

// profiler.LiveObject (live option).
struct LiveObjectFields {
  uint64_t allocation_ticks;  // written as startTime and allocationTime
  uint32_t thread_key;
  uint32_t stack_key;
  uint32_t class_key;
  uint64_t object_bytes;
};

struct ContextEventFields {
  uint64_t start_ticks;
  uint64_t duration_ticks;
  uint32_t thread_key;
  const ContextSnapshot* context;  // attribute ids are the String pool keys
  size_t attribute_count;          // registered attribute slots, each a field
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
  uint64_t allocation_samples;
  uint64_t monitor_enters;
  uint64_t thread_parks;
  uint64_t live_objects;
  uint64_t untracked_objects;
};

class EventEncoder {
 public:
  void AppendSample(const SampleEventFields& fields, JfrBuffer* out);
  void AppendAllocation(const AllocationEventFields& fields, JfrBuffer* out);
  void AppendWait(const WaitEventFields& fields, JfrBuffer* out);
  void AppendLiveObject(const LiveObjectFields& fields, JfrBuffer* out);
  void AppendContext(const ContextEventFields& fields, JfrBuffer* out);
  void AppendSettings(const SettingsEventFields& fields, JfrBuffer* out);
  void AppendCounters(const CounterEventFields& fields, JfrBuffer* out);

 private:
  // A record of `type` whose fields are all varints.
  void AppendVarints(uint32_t type, std::initializer_list<uint64_t> fields, JfrBuffer* out);

  JfrBuffer scratch_;  // a record's body before its size is known
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_RECORDING_EVENT_ENCODER_H_
