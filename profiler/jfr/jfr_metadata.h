// JfrMetadata: the type ids and the metadata record (JFR type id 0) of a ctxprof recording.
//
// The metadata declares the JDK types a profiler recording needs (threads, stack traces,
// frames, methods, classes, packages, symbols, frame types, thread states), the annotation
// types it uses, and these event types, whose fields in wire order are listed in docs/JFR.md,
// "Event types" (keep that table in step with this file):
//   samples         jdk.ExecutionSample, profiler.WallClockSample, jdk.NativeMethodSample,
//                   ctxprof.CpuSample
//   runtime events  jdk.ObjectAllocationSample (or jdk.ObjectAllocationInNewTLAB with
//                   EventLayout::tlab_allocations), jdk.JavaMonitorEnter, jdk.ThreadPark,
//                   profiler.LiveObject
//   context         ctxprof.Context (startTime, duration, eventThread, [contextId], traceIdHigh,
//                   traceIdLow, spanId, one field per attribute)
//   latency         ctxprof.SpanLatency (startTime, duration, spans, totalDuration,
//                   maxDuration, bucketDeltas, one field per attribute)
//   settings        jdk.ActiveSetting, ctxprof.ProfilerSettings, ctxprof.ProfilerCounters
//
// The sample events use async-profiler's names, field order and types, because its converter
// reads them by position, not by name: jdk.ExecutionSample and jdk.NativeMethodSample exactly as
// the JDK declares them, profiler.WallClockSample as async-profiler does except that its thread
// field is named eventThread (the converter does not look at names, and JDK 25's `jfr print`
// attaches contexts only to events with an eventThread). The three jdk.* runtime events have the
// JDK's exact field names, types, order and units, so JDK tools (`jfr view`, JMC) read them as
// their own and async-profiler's converter reads them with --alloc and --lock;
// profiler.LiveObject is async-profiler's layout (--live). The trailing contextId long is declared
// only with EventLayout::context_id: Pyroscope's parser reads it by name, async-profiler's
// converter loses its place on it. With EventLayout::tlab_allocations, allocations are declared as
// jdk.ObjectAllocationInNewTLAB (the JDK's fields; tlabSize carries the sample's weight, as
// async-profiler's alloc mode writes it), because Pyroscope's parser reads a contextId on that
// event and not on jdk.ObjectAllocationSample.
//
// ctxprof.Context's ids (longs, @MemoryAddress: `jfr print` shows hex) and attributes carry
// @jdk.jfr.Contextual: JDK 25's `jfr print` shows them as "Context:" lines under every event
// whose eventThread is inside the interval. Attribute fields are java.lang.String fields with
// constantPool: the value is a key into the String pool, and the key is the attribute's Dictionary
// id (stable for the whole recording, so it obeys JFR's cross-chunk key rule).
//
// The metadata depends only on the attribute names, fixed for a recording: every chunk carries
// identical metadata under the same id. Thread safety: pure functions, any thread.
#ifndef CTXPROF_PROFILER_JFR_JFR_METADATA_H_
#define CTXPROF_PROFILER_JFR_JFR_METADATA_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/jfr/jfr_buffer.h"

namespace ctxprof {

// Type ids. 0 and 1 are the metadata and checkpoint record types and are never class ids.
enum JfrTypeId : uint32_t {
  kJfrTypeBoolean = 4,
  kJfrTypeChar = 5,
  kJfrTypeFloat = 6,
  kJfrTypeDouble = 7,
  kJfrTypeByte = 8,
  kJfrTypeShort = 9,
  kJfrTypeInt = 10,
  kJfrTypeLong = 11,
  kJfrTypeString = 20,
  kJfrTypeThread = 21,
  kJfrTypeClass = 22,
  kJfrTypeClassLoader = 23,
  kJfrTypeFrameType = 24,
  kJfrTypeThreadState = 25,
  kJfrTypeStackTrace = 26,
  kJfrTypeStackFrame = 27,
  kJfrTypeMethod = 28,
  kJfrTypePackage = 29,
  kJfrTypeSymbol = 30,
  kJfrTypeExecutionSample = 101,
  kJfrTypeWallClockSample = 102,  // profiler.WallClockSample
  kJfrTypeCpuSample = 103,
  kJfrTypeContext = 104,
  kJfrTypeProfilerSettings = 105,
  kJfrTypeProfilerCounters = 106,
  kJfrTypeObjectAllocationSample = 107,
  kJfrTypeJavaMonitorEnter = 108,
  kJfrTypeThreadPark = 109,
  kJfrTypeLiveObject = 110,
  kJfrTypeObjectAllocationInNewTLAB = 111,
  kJfrTypeSpanLatency = 112,
  kJfrTypeNativeMethodSample = 120,
  kJfrTypeActiveSetting = 121,
  kJfrTypeLabel = 200,
  kJfrTypeCategory = 201,
  kJfrTypeTimestamp = 202,
  kJfrTypeTimespan = 203,
  kJfrTypeContentType = 204,
  kJfrTypeContextual = 205,
  kJfrTypeDescription = 206,
  kJfrTypeUnsigned = 207,
  kJfrTypeDataAmount = 208,
  kJfrTypeMemoryAddress = 209,
  // Up to 2 * kAttributeSlots + 1 more: ctxprof.Context and ctxprof.SpanLatency of later
  // attribute generations (JfrMetadata::ContextTypeIdOf).
  kJfrTypeLaterContexts = 300,
};

// Frame types: keys of the jdk.types.FrameType pool (the same in every chunk). The keys are
// async-profiler's, because its converter reads a frame's type as a number: 3 (Native), 4 (C++)
// and 5 (Kernel) are C/C++/kernel functions, named without their class (library) — 3 only in
// files whose pool has key 5, which tells it from the JDK's use of 3 for Java native methods.
// So a Java native method must not be typed 3 here (jni/jvm_resolvers.cc types it by how it
// runs, as async-profiler does).
enum class JfrFrameType : uint8_t {
  kInterpreted = 0,
  kJitCompiled = 1,
  kInlined = 2,
  kNative = 3,
  kCpp = 4,
  kKernel = 5,
};
inline constexpr int kJfrFrameTypeCount = 6;
// The JFR name of a frame type ("Interpreted", "JIT compiled", "Inlined", "Native", "C++",
// "Kernel").
const char* JfrFrameTypeName(JfrFrameType type);

// Thread states: keys of the jdk.types.ThreadState pool, with async-profiler's names. Readers go
// by the name: async-profiler's converter counts STATE_DEFAULT samples as CPU (`--cpu`) and the
// others as wall time (`--wall`); Pyroscope counts every state but STATE_SLEEPING as CPU.
enum JfrThreadStateKey : uint32_t {
  kJfrStateRunnable = 1,  // wall sample of a thread that was running
  kJfrStateSleeping = 2,  // wall sample of a thread in (or interrupted out of) a system call
  kJfrStateDefault = 3,   // CPU sample
};
inline constexpr int kJfrThreadStateCount = 3;
const char* JfrThreadStateName(int key);  // "STATE_RUNNABLE", "STATE_SLEEPING", "STATE_DEFAULT"

// Variations of the event layout, fixed for a recording (see the file comment).
struct JfrEventLayout {
  bool context_id = false;  // every sample and runtime event ends with `contextId` (long)
  // Allocation samples are jdk.ObjectAllocationInNewTLAB {..., allocationSize, tlabSize = the
  // weight} instead of jdk.ObjectAllocationSample {..., weight}.
  bool tlab_allocations = false;
  // How many times attribute names were added since the recording started (names registered
  // after it, taken at a chunk start). The types with a field per name, ctxprof.Context and
  // ctxprof.SpanLatency, get ids of their own in each generation: a reader may keep a type's
  // fields by its id across chunks (JDK 25's `jfr print` does, for the Context lines).
  uint32_t attribute_generation = 0;
};

class JfrMetadata {
 public:
  // The metadata id of the chunks we write in attribute generation `generation`. Large, so it
  // cannot clash with the small ids of HotSpot-written chunks if files are concatenated; it
  // changes with the names, because a reader may keep a previous chunk's metadata when the id is
  // the same (the JDK's parser does).
  static constexpr uint64_t MetadataIdOf(uint32_t generation) { return 0x7C7C0001 + generation; }
  // The type ids of ctxprof.Context and ctxprof.SpanLatency in `generation` (JfrEventLayout).
  static constexpr uint32_t ContextTypeIdOf(uint32_t generation) {
    return generation == 0 ? kJfrTypeContext : kJfrTypeLaterContexts + 2 * generation;
  }
  static constexpr uint32_t SpanLatencyTypeIdOf(uint32_t generation) {
    return generation == 0 ? kJfrTypeSpanLatency : kJfrTypeLaterContexts + 2 * generation + 1;
  }

  // The ctxprof.Context field name for an attribute name: '.' and '-' become '_'.
  static std::string FieldNameOf(std::string_view attribute_name);

  // Appends the metadata's string table and element tree (the type and event declarations) to
  // `out`: the part of every chunk's metadata record that depends only on `attribute_names` (the
  // registered attribute names, in slot order) and `layout`. A writer makes it once and repeats
  // it in every chunk (building the tree costs ~1.4 M instructions).
  static void SerializeDeclarations(const std::vector<std::string>& attribute_names,
                                    const JfrEventLayout& layout, JfrBuffer* out);
  // Appends the whole metadata record (size, type 0, start ticks, duration 0, `metadata_id`, then
  // `declarations` from SerializeDeclarations) to `out`.
  static void Write(const JfrBuffer& declarations, uint64_t metadata_id, uint64_t start_ticks,
                    JfrBuffer* out);

  // Number of pools WriteStaticPools appends.
  static constexpr uint32_t kStaticPoolCount = 2;
  // Appends the pools whose entries never change (jdk.types.FrameType, jdk.types.ThreadState),
  // for the first checkpoint of every chunk.
  static void WriteStaticPools(JfrBuffer* out);
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_JFR_JFR_METADATA_H_
