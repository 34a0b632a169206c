// Another library of the process that exports otel_thread_ctx_v1, as a tracer's native part
// would: otel_reader_test preloads it (LD_PRELOAD puts it first in the global scope) to check
// that libctxprof's writes still land in libctxprof's own variable, never in this one.
extern "C" {

__attribute__((visibility("default"))) __thread void* otel_thread_ctx_v1 = nullptr;

// This library's variable on the calling thread: null as long as nobody else wrote it.
__attribute__((visibility("default"))) void* foreign_otel_pointer() { return otel_thread_ctx_v1; }

}  // extern "C"
