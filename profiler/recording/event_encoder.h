// EventEncoder: the bytes of ctxprof's events, in the field order jfr_metadata.h declares them.
//
//   sample     jdk.ExecutionSample {startTime, sampledThread, stackTrace, state} (the JDK's exact
//              layout, which async-profiler's converter reads field by field), or
//              ctxprof.WallClockSample / ctxprof.CpuSample {startTime, eventThread, stackTrace,
//              state, weight}
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
  std::string attributes;  // the attribute names, comma-separated
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
};

class EventEncoder {
 public:
  void AppendSample(const SampleEventFields& fields, JfrBuffer* out);
  void AppendContext(const ContextEventFields& fields, JfrBuffer* out);
  void AppendSettings(const SettingsEventFields& fields, JfrBuffer* out);
  void AppendCounters(const CounterEventFields& fields, JfrBuffer* out);

 private:
  JfrBuffer scratch_;  // a record's body before its size is known
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_RECORDING_EVENT_ENCODER_H_
