#include "profiler/jfr_events/event_encoder.h"

#include "profiler/jfr/jfr_metadata.h"

namespace ctxprof {
namespace {

// A signed 32-bit field as the JDK encodes it: the two's complement masked to 32 bits.
uint64_t IntBits(int32_t value) { return static_cast<uint32_t>(value); }

}  // namespace

void EventEncoder::AppendSample(const SampleEventFields& fields, JfrBuffer* out) {
  const bool weighted = fields.type == kJfrTypeWallClockSample || fields.type == kJfrTypeCpuSample;
  const uint32_t copies = weighted ? 1 : fields.weight;
  for (uint32_t copy = 0; copy < copies; copy++) {
    // Every sample event is shorter than 128 bytes (at most 1+1+9+5+5+1+5+1+9), so its size
    // is one byte, patched after the fields: no scratch copy on the hottest path of the writer.
    const size_t start = out->size();
    out->PutByte(0);
    out->PutVarint(fields.type);
    out->PutVarint(fields.ticks);
    out->PutVarint(fields.thread_key);
    out->PutVarint(fields.stack_key);
    out->PutVarint(fields.state_key);
    if (fields.type == kJfrTypeWallClockSample) {
      out->PutVarint(fields.weight);  // samples
      out->PutVarint(0);              // timeSpan: the sample is one instant
    } else if (fields.type == kJfrTypeCpuSample) {
      out->PutVarint(fields.weight);
    }
    PutContextId(fields.context_id, out);
    out->mutable_data()[start] = static_cast<uint8_t>(out->size() - start);
  }
}

void EventEncoder::AppendVarints(uint32_t type, std::initializer_list<uint64_t> fields,
                                 std::optional<uint64_t> context_id, JfrBuffer* out) {
  scratch_.clear();
  scratch_.PutVarint(type);
  for (uint64_t value : fields) scratch_.PutVarint(value);
  if (context_id.has_value()) PutContextId(*context_id, &scratch_);
  out->PutRecord(scratch_);
}

void EventEncoder::AppendAllocation(const AllocationEventFields& fields, JfrBuffer* out) {
  if (layout_.tlab_allocations) {
    AppendVarints(kJfrTypeObjectAllocationInNewTLAB,
                  {fields.ticks, fields.thread_key, fields.stack_key, fields.class_key,
                   fields.object_bytes, /*tlabSize=*/fields.weight},
                  fields.context_id, out);
  } else {
    AppendVarints(
        kJfrTypeObjectAllocationSample,
        {fields.ticks, fields.thread_key, fields.stack_key, fields.class_key, fields.weight},
        fields.context_id, out);
  }
}

void EventEncoder::AppendWait(const WaitEventFields& fields, JfrBuffer* out) {
  // previousOwner (monitor): null, JVMTI does not tell it (docs/JFR.md); address: unknown, 0.
  if (fields.type == kJfrTypeJavaMonitorEnter) {
    AppendVarints(fields.type,
                  {fields.start_ticks, fields.duration_ticks, fields.thread_key, fields.stack_key,
                   fields.class_key, /*previousOwner=*/0, /*address=*/0},
                  fields.context_id, out);
  } else {
    AppendVarints(fields.type,
                  {fields.start_ticks, fields.duration_ticks, fields.thread_key, fields.stack_key,
                   fields.class_key, static_cast<uint64_t>(fields.timeout_nanos),
                   static_cast<uint64_t>(fields.until_millis), /*address=*/0},
                  fields.context_id, out);
  }
}

void EventEncoder::AppendLiveObject(const LiveObjectFields& fields, JfrBuffer* out) {
  AppendVarints(kJfrTypeLiveObject,
                {fields.allocation_ticks, fields.thread_key, fields.stack_key, fields.class_key,
                 fields.object_bytes, fields.allocation_ticks},
                fields.context_id, out);
}

void EventEncoder::AppendContext(const ContextEventFields& fields, JfrBuffer* out) {
  const ContextSnapshot& context = *fields.context;
  scratch_.clear();
  scratch_.PutVarint(JfrMetadata::ContextTypeIdOf(layout_.attribute_generation));
  scratch_.PutVarint(fields.start_ticks);
  scratch_.PutVarint(fields.duration_ticks);
  scratch_.PutVarint(fields.thread_key);
  PutContextId(fields.context_id, &scratch_);
  scratch_.PutVarint(context.trace_id_high);
  scratch_.PutVarint(context.trace_id_low);
  scratch_.PutVarint(context.span_id);
  for (size_t slot = 0; slot < fields.attribute_count; slot++) {
    scratch_.PutVarint(context.attributes[slot]);  // String pool key = Dictionary id; 0 = null
  }
  out->PutRecord(scratch_);
}

void EventEncoder::AppendSpanLatency(const SpanLatencyFields& fields, JfrBuffer* out) {
  const LatencyHistogram& histogram = *fields.histogram;
  scratch_.clear();
  scratch_.PutVarint(JfrMetadata::SpanLatencyTypeIdOf(layout_.attribute_generation));
  scratch_.PutVarint(fields.start_ticks);
  scratch_.PutVarint(fields.duration_ticks);
  scratch_.PutVarint(static_cast<uint64_t>(histogram.count()));
  scratch_.PutVarint(static_cast<uint64_t>(histogram.sum()));
  scratch_.PutVarint(static_cast<uint64_t>(histogram.max()));
  scratch_.PutString(histogram.BucketDeltasText());
  for (size_t slot = 0; slot < fields.attribute_count; slot++) {
    scratch_.PutVarint(fields.attributes[slot]);  // String pool key = Dictionary id; 0 = null
  }
  out->PutRecord(scratch_);
}

void EventEncoder::AppendActiveSetting(const ActiveSettingFields& fields, JfrBuffer* out) {
  scratch_.clear();
  scratch_.PutVarint(kJfrTypeActiveSetting);
  scratch_.PutVarint(fields.ticks);
  scratch_.PutVarint(fields.event_type);
  scratch_.PutString(fields.name);
  scratch_.PutString(fields.value);
  out->PutRecord(scratch_);
}

void EventEncoder::AppendSettings(const SettingsEventFields& fields, JfrBuffer* out) {
  scratch_.clear();
  scratch_.PutVarint(kJfrTypeProfilerSettings);
  scratch_.PutVarint(fields.ticks);
  scratch_.PutString(fields.engine);
  scratch_.PutVarint(fields.interval_nanos);
  scratch_.PutString(fields.fallbacks);
  scratch_.PutString(fields.clock);
  scratch_.PutVarint(fields.ticks_per_second);
  scratch_.PutString(fields.cpu_samples);
  scratch_.PutVarint(IntBits(fields.stack_depth));
  scratch_.PutString(fields.attributes);
  scratch_.PutVarint(fields.alloc_interval_bytes);
  scratch_.PutVarint(static_cast<uint64_t>(fields.lock_threshold_nanos));
  scratch_.PutString(fields.select);
  scratch_.PutString(fields.version);
  out->PutRecord(scratch_);
}

void EventEncoder::AppendCounters(const CounterEventFields& fields, JfrBuffer* out) {
  AppendVarints(kJfrTypeProfilerCounters,
                {fields.ticks, fields.samples, fields.cpu_samples, fields.wall_samples,
                 fields.dropped_samples, fields.context_busy, fields.context_torn,
                 fields.truncated_stacks, fields.dictionary_overflows, fields.truncated_values,
                 fields.uploaded_chunks, fields.dropped_uploads, fields.allocation_samples,
                 fields.monitor_enters, fields.thread_parks, fields.live_objects,
                 fields.untracked_objects, fields.timed_spans, fields.dropped_spans},
                std::nullopt, out);
}

}  // namespace ctxprof
