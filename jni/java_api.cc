// JNI methods of io.ctxprof.Native: the Java API's bridge to the process context store.
//
// execute0 is the Java API's control call (Profiler.execute): the control commands of
// jni/control_command.h ("start[,options]", "stop", "dump,file=<path>", "status"). The Status
// of a failed command becomes an exception whose message is "ctxprof: <command>: <the
// profiler's message>": kInvalidArgument (a malformed command or option) ->
// IllegalArgumentException; kWrongState (double start, stop or dump without a session) and
// kUnavailable (the system refused perf events, timers, a signal, memory or a thread) ->
// IllegalStateException; kIo (the recording's file or folder, the dump file) ->
// java.io.UncheckedIOException whose cause is an IOException with the same message, which names
// the path and the OS error.
//
// None of the others is on the platform-thread write path (Java writes its block directly); they
// run once per process (layout0, contextMap0), once per thread (threadBlock0), once per distinct
// value (intern0), once per setter (registerAttributes0, slotOf0), or per write for virtual
// threads (the *Jni0 setters, which write through ThreadContext like the C API).
#include <jni.h>

#include <algorithm>
#include <string>
#include <vector>

#include "context/context_block.h"
#include "context/process_context.h"
#include "context/thread_context.h"
#include "jni/control_command.h"
#include "jni/java_strings.h"
#include "jni/jvm_agent.h"
#include "profiler/profiler.h"

namespace ctxprof {
namespace {

void Throw(JNIEnv* env, const char* exception, const std::string& message) {
  jclass type = env->FindClass(exception);
  if (type != nullptr) env->ThrowNew(type, ("ctxprof: " + message).c_str());
}

void ThrowNoStore(JNIEnv* env, const std::string& error) {
  Throw(env, "java/lang/IllegalStateException", "context store unavailable: " + error);
}

// The process context store, or nullptr with an IllegalStateException pending.
ProcessContext* Store(JNIEnv* env) {
  std::string error;
  ProcessContext* store = ProcessContext::Get(&error);
  if (store == nullptr) ThrowNoStore(env, error);
  return store;
}

// A *Jni0 setter's outcome: an IllegalStateException when the store is unavailable. A thread
// whose tid is beyond the map (kNoBlock, counted by the map) simply has no context, as its
// threadBlock0 said; a bad slot cannot come from ContextSetter, which only hands out
// registered ones.
void CheckWrite(JNIEnv* env, ContextWrite write) {
  if (write == ContextWrite::kNoStore) ThrowNoStore(env, ThreadContext::StoreError());
}

// new UncheckedIOException(message, new IOException(message)): the Java form of kIo.
void ThrowIo(JNIEnv* env, const std::string& message) {
  jstring text = ToJavaString(env, "ctxprof: " + message);
  jclass io_type = env->FindClass("java/io/IOException");
  jclass unchecked_type = env->FindClass("java/io/UncheckedIOException");
  if (text == nullptr || io_type == nullptr || unchecked_type == nullptr) return;  // pending
  jmethodID io_init = env->GetMethodID(io_type, "<init>", "(Ljava/lang/String;)V");
  jmethodID unchecked_init =
      env->GetMethodID(unchecked_type, "<init>", "(Ljava/lang/String;Ljava/io/IOException;)V");
  if (io_init == nullptr || unchecked_init == nullptr) return;
  jobject cause = env->NewObject(io_type, io_init, text);
  if (cause == nullptr) return;
  auto exception =
      static_cast<jthrowable>(env->NewObject(unchecked_type, unchecked_init, text, cause));
  if (exception != nullptr) env->Throw(exception);
}

// Runs one control command (control_command.h); returns its answer, or nullptr with the
// exception of its Status pending (see the top of this file).
jstring Execute(JNIEnv* env, const std::string& command) {
  std::string answer;
  const Status status = RunControlCommand(command, &answer);
  switch (status.code()) {
    case StatusCode::kOk:
      return ToJavaString(env, answer);
    case StatusCode::kInvalidArgument:
      Throw(env, "java/lang/IllegalArgumentException", status.message());
      return nullptr;
    case StatusCode::kIo:
      ThrowIo(env, status.message());
      return nullptr;
    case StatusCode::kWrongState:
    case StatusCode::kUnavailable:
      break;
  }
  Throw(env, "java/lang/IllegalStateException", status.message());
  return nullptr;
}

}  // namespace
}  // namespace ctxprof

using ctxprof::ContextBlock;
using ctxprof::ThreadContext;

extern "C" {

JNIEXPORT jintArray JNICALL Java_io_ctxprof_Native_layout0(JNIEnv* env, jclass) {
  const ctxprof::ContextLayout& layout = ctxprof::kContextLayout;
  const jint fields[] = {
      static_cast<jint>(layout.block_size),           static_cast<jint>(layout.sequence_offset),
      static_cast<jint>(layout.trace_id_high_offset), static_cast<jint>(layout.trace_id_low_offset),
      static_cast<jint>(layout.span_id_offset),       static_cast<jint>(layout.attributes_offset),
      static_cast<jint>(layout.attribute_size),       static_cast<jint>(layout.attribute_slots),
  };
  jintArray array = env->NewIntArray(8);
  if (array != nullptr) env->SetIntArrayRegion(array, 0, 8, fields);
  return array;
}

JNIEXPORT jobject JNICALL Java_io_ctxprof_Native_threadBlock0(JNIEnv* env, jclass) {
  ctxprof::JvmAgent::SeeCurrentThread(env);
  if (ctxprof::Store(env) == nullptr) return nullptr;
  ContextBlock* block = ThreadContext::OwnBlock();
  if (block == nullptr) return nullptr;
  return env->NewDirectByteBuffer(block, sizeof(ContextBlock));
}

JNIEXPORT jobject JNICALL Java_io_ctxprof_Native_contextMap0(JNIEnv* env, jclass) {
  ctxprof::ProcessContext* store = ctxprof::Store(env);
  if (store == nullptr) return nullptr;
  ctxprof::ContextMap& map = store->map();
  // At most kMaxCapacity (2^22) blocks of 64 bytes = 256 MiB, then the span logs (304 MiB) and
  // the OpenTelemetry thread records (10 MiB): within a buffer's int capacity.
  constexpr size_t kTail = ctxprof::SpanLogPool::kBytes + ctxprof::OtelRecordPool::kBytes;
  static_assert(ctxprof::ContextMap::kMaxCapacity * sizeof(ContextBlock) + kTail <= 0x7fffffff,
                "the whole map must fit one direct buffer");
  return env->NewDirectByteBuffer(
      map.blocks(), static_cast<jlong>(map.capacity() * sizeof(ContextBlock) + kTail));
}

JNIEXPORT jobject JNICALL Java_io_ctxprof_Native_otelFlag0(JNIEnv* env, jclass) {
  // No exception without a store: OtelRecord's initializer runs on the write path, which
  // then simply never publishes (the write itself reports the missing store).
  std::string error;
  ctxprof::ProcessContext* store = ctxprof::ProcessContext::Get(&error);
  if (store == nullptr) return nullptr;
  // Called from OtelRecord's initializer: FindClass sees the class being initialized.
  jclass otel_record = env->FindClass("io/ctxprof/OtelRecord");
  if (otel_record != nullptr) ctxprof::JvmAgent::RegisterJavaOtel(env, otel_record);
  env->ExceptionClear();
  return env->NewDirectByteBuffer(
      store->map().otel_records().base() + ctxprof::OtelRecordPool::kFlagOffset, 1);
}

JNIEXPORT jobject JNICALL Java_io_ctxprof_Native_otelRecord0(JNIEnv* env, jclass) {
  if (ctxprof::Store(env) == nullptr) return nullptr;
  ctxprof::OtelThreadRecord* record = ThreadContext::OwnOtelRecord();
  if (record == nullptr) return nullptr;
  return env->NewDirectByteBuffer(record, sizeof(ctxprof::OtelThreadRecord));
}

JNIEXPORT jintArray JNICALL Java_io_ctxprof_Native_spanLogLayout0(JNIEnv* env, jclass) {
  const ctxprof::SpanLogLayout layout = ctxprof::GetSpanLogLayout();
  const jint fields[] = {
      static_cast<jint>(layout.log_bytes),         static_cast<jint>(layout.records),
      static_cast<jint>(layout.record_bytes),      static_cast<jint>(layout.head_offset),
      static_cast<jint>(layout.dropped_offset),    static_cast<jint>(layout.open_begin_offset),
      static_cast<jint>(layout.tail_offset),       static_cast<jint>(layout.records_offset),
      static_cast<jint>(layout.dropped_at_offset),
  };
  constexpr jsize kFields = sizeof(fields) / sizeof(fields[0]);
  jintArray array = env->NewIntArray(kFields);
  if (array != nullptr) env->SetIntArrayRegion(array, 0, kFields, fields);
  return array;
}

JNIEXPORT jobject JNICALL Java_io_ctxprof_Native_spanLog0(JNIEnv* env, jclass) {
  if (ctxprof::Store(env) == nullptr) return nullptr;
  ctxprof::SpanLog* log = ThreadContext::OwnSpanLog();
  if (log == nullptr) return nullptr;
  return env->NewDirectByteBuffer(log, ctxprof::kSpanLogBytes);
}

JNIEXPORT jlong JNICALL Java_io_ctxprof_Native_spanTicksAddress0(JNIEnv*, jclass) {
  return reinterpret_cast<jlong>(&ctxprof::SpanTicks);  // uint64_t(void): a plain C call
}

JNIEXPORT void JNICALL Java_io_ctxprof_Native_setSpanTiming0(JNIEnv*, jclass, jboolean enabled) {
  ThreadContext::SetSpanTiming(enabled == JNI_TRUE);
}

JNIEXPORT jlong JNICALL Java_io_ctxprof_Native_blockAddress0(JNIEnv* env, jclass, jobject block) {
  return reinterpret_cast<jlong>(env->GetDirectBufferAddress(block));
}

JNIEXPORT jint JNICALL Java_io_ctxprof_Native_intern0(JNIEnv* env, jclass, jstring value) {
  ctxprof::ProcessContext* store = ctxprof::Store(env);
  if (store == nullptr) return 0;
  return static_cast<jint>(store->dictionary().Intern(ctxprof::FromJavaString(env, value)));
}

JNIEXPORT jstring JNICALL Java_io_ctxprof_Native_valueOf0(JNIEnv* env, jclass, jint id) {
  ctxprof::ProcessContext* store = ctxprof::Store(env);
  if (store == nullptr || id <= 0) return nullptr;
  return ctxprof::ToJavaString(env, store->dictionary().ValueOf(static_cast<uint32_t>(id)));
}

JNIEXPORT jstring JNICALL Java_io_ctxprof_Native_registerAttributes0(JNIEnv* env, jclass,
                                                                     jobjectArray names) {
  ctxprof::ProcessContext* store = ctxprof::Store(env);
  if (store == nullptr) return nullptr;
  std::vector<std::string> list;
  const jsize count = env->GetArrayLength(names);
  for (jsize i = 0; i < count; i++) {
    auto name = static_cast<jstring>(env->GetObjectArrayElement(names, i));
    list.push_back(ctxprof::FromJavaString(env, name));
    env->DeleteLocalRef(name);
  }
  std::string error;
  if (!store->attributes().Register(list, &error)) return ctxprof::ToJavaString(env, error);
  ctxprof::Profiler::Global()->ReportUnrecordedAttributes();
  return nullptr;
}

JNIEXPORT jint JNICALL Java_io_ctxprof_Native_slotOf0(JNIEnv* env, jclass, jstring name) {
  ctxprof::ProcessContext* store = ctxprof::Store(env);
  if (store == nullptr) return -1;
  return store->attributes().SlotOf(ctxprof::FromJavaString(env, name));
}

JNIEXPORT void JNICALL Java_io_ctxprof_Native_setAttributeJni0(JNIEnv* env, jclass, jint slot,
                                                               jint id) {
  ctxprof::CheckWrite(env, ThreadContext::SetAttributeId(slot, static_cast<uint32_t>(id)));
}

JNIEXPORT void JNICALL Java_io_ctxprof_Native_setTraceContextJni0(JNIEnv* env, jclass,
                                                                  jlong trace_high, jlong trace_low,
                                                                  jlong span) {
  ctxprof::CheckWrite(
      env, ThreadContext::SetTrace(static_cast<uint64_t>(trace_high),
                                   static_cast<uint64_t>(trace_low), static_cast<uint64_t>(span)));
}

JNIEXPORT void JNICALL Java_io_ctxprof_Native_setAllJni0(JNIEnv* env, jclass, jlong trace_high,
                                                         jlong trace_low, jlong span,
                                                         jintArray attributes) {
  ctxprof::ContextSnapshot context{};
  context.trace_id_high = static_cast<uint64_t>(trace_high);
  context.trace_id_low = static_cast<uint64_t>(trace_low);
  context.span_id = static_cast<uint64_t>(span);
  const jsize count = std::min<jsize>(env->GetArrayLength(attributes), ctxprof::kAttributeSlots);
  env->GetIntArrayRegion(attributes, 0, count, reinterpret_cast<jint*>(context.attributes));
  ctxprof::CheckWrite(env, ThreadContext::SetAll(context));
}

JNIEXPORT void JNICALL Java_io_ctxprof_Native_clearJni0(JNIEnv* env, jclass) {
  ctxprof::CheckWrite(env, ThreadContext::Clear());
}

JNIEXPORT jstring JNICALL Java_io_ctxprof_Native_execute0(JNIEnv* env, jclass, jstring command) {
  ctxprof::JvmAgent::SeeCurrentThread(env);
  return ctxprof::Execute(env, ctxprof::FromJavaString(env, command));
}

}  // extern "C"
