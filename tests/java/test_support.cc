// Native helpers for the Java tests: read a context block the way the profiler does (the
// seqlock reader), from the test's own thread or from a concurrent native reader thread.
// Linked into its own small library; it reaches blocks through the direct ByteBuffers the Java
// API hands out, so it shares no global state with libctxprof.
#include <jni.h>

#include <atomic>
#include <thread>
#include <vector>

#include "context/context_block.h"

namespace ctxprof {
namespace {

// Must match ContextSetterTest.mix / pattern.
uint64_t Mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}

bool IsWholeContext(const ContextSnapshot& context, uint64_t writer) {
  if (context.empty()) return true;
  if ((context.trace_id_high >> 48) != writer) return false;
  if (context.trace_id_low != Mix(context.trace_id_high)) return false;
  if (context.span_id != Mix(context.trace_id_low)) return false;
  for (int i = 0; i < kAttributeSlots; i++) {
    if (context.attributes[i] != static_cast<uint32_t>(Mix(context.span_id + i))) return false;
  }
  return true;
}

struct Reader {
  std::vector<const ContextBlock*> blocks;
  std::atomic<bool> stop{false};
  uint64_t counts[4] = {};  // consistent, busy, torn, mixed
  std::thread thread;
};

Reader* reader = nullptr;

}  // namespace
}  // namespace ctxprof

using ctxprof::ContextBlock;
using ctxprof::ContextSnapshot;
using ctxprof::ReadStatus;

extern "C" {

// {status (0 consistent, 1 busy, 2 torn), trace high, trace low, span, attributes...}
JNIEXPORT jlongArray JNICALL Java_io_ctxprof_TestSupport_readBlock(JNIEnv* env, jclass,
                                                                   jobject buffer) {
  auto* block = static_cast<const ContextBlock*>(env->GetDirectBufferAddress(buffer));
  ContextSnapshot context;
  const ReadStatus status = ReadBlock(*block, &context, ctxprof::kOtherThreadReadAttempts);
  jlong values[4 + ctxprof::kAttributeSlots] = {
      static_cast<jlong>(status), static_cast<jlong>(context.trace_id_high),
      static_cast<jlong>(context.trace_id_low), static_cast<jlong>(context.span_id)};
  for (int i = 0; i < ctxprof::kAttributeSlots; i++) values[4 + i] = context.attributes[i];
  jlongArray array = env->NewLongArray(4 + ctxprof::kAttributeSlots);
  env->SetLongArrayRegion(array, 0, 4 + ctxprof::kAttributeSlots, values);
  return array;
}

// Starts a native thread that keeps reading blocks[i] (written by Java writer i) and checks
// every consistent copy against the writers' pattern.
JNIEXPORT void JNICALL Java_io_ctxprof_TestSupport_startReader(JNIEnv* env, jclass,
                                                               jobjectArray buffers) {
  auto* reader = new ctxprof::Reader();
  const jsize count = env->GetArrayLength(buffers);
  for (jsize i = 0; i < count; i++) {
    jobject buffer = env->GetObjectArrayElement(buffers, i);
    reader->blocks.push_back(static_cast<const ContextBlock*>(env->GetDirectBufferAddress(buffer)));
  }
  reader->thread = std::thread([reader] {
    while (!reader->stop.load(std::memory_order_relaxed)) {
      for (size_t writer = 0; writer < reader->blocks.size(); writer++) {
        ContextSnapshot context;
        const ReadStatus status =
            ReadBlock(*reader->blocks[writer], &context, ctxprof::kOtherThreadReadAttempts);
        reader->counts[static_cast<int>(status)]++;
        if (status == ReadStatus::kConsistent && !ctxprof::IsWholeContext(context, writer)) {
          reader->counts[3]++;
        }
      }
    }
  });
  ctxprof::reader = reader;
}

// Stops the reader; returns {consistent, busy, torn, mixed}.
JNIEXPORT jlongArray JNICALL Java_io_ctxprof_TestSupport_stopReader(JNIEnv* env, jclass) {
  ctxprof::Reader* reader = ctxprof::reader;
  reader->stop.store(true);
  reader->thread.join();
  jlongArray array = env->NewLongArray(4);
  env->SetLongArrayRegion(array, 0, 4, reinterpret_cast<const jlong*>(reader->counts));
  delete reader;
  ctxprof::reader = nullptr;
  return array;
}

}  // extern "C"
