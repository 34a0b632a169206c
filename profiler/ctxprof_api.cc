// The C API (profiler/ctxprof.h): sessions through Profiler::Global(), the calling thread's
// context through ThreadContext. No C++ exception crosses it: every entry point that allocates
// catches, and answers CTXPROF_EUNAVAIL (allocation failure is the only exception expected).
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "context/thread_context.h"
#include "profiler/ctxprof.h"
#include "profiler/profiler.h"

namespace {

void CopyMessage(const std::string& message, char* error, size_t error_len) {
  if (error == nullptr || error_len == 0) return;
  const size_t length = message.size() < error_len - 1 ? message.size() : error_len - 1;
  memcpy(error, message.data(), length);
  error[length] = '\0';
}

int ToCode(const ctxprof::Status& status) {
  switch (status.code()) {
    case ctxprof::StatusCode::kOk:
      return 0;
    case ctxprof::StatusCode::kInvalidArgument:
      return CTXPROF_EINVAL;
    case ctxprof::StatusCode::kWrongState:
      return CTXPROF_ESTATE;
    case ctxprof::StatusCode::kIo:
      return CTXPROF_EIO;
    case ctxprof::StatusCode::kUnavailable:
      return CTXPROF_EUNAVAIL;
  }
  return CTXPROF_EINVAL;
}

int ToCode(ctxprof::ContextWrite write) {
  switch (write) {
    case ctxprof::ContextWrite::kWritten:
      return 0;
    case ctxprof::ContextWrite::kBadSlot:
      return CTXPROF_EINVAL;
    case ctxprof::ContextWrite::kNoBlock:
    case ctxprof::ContextWrite::kNoStore:
      return CTXPROF_EUNAVAIL;
  }
  return CTXPROF_EINVAL;
}

}  // namespace

extern "C" {

int ctxprof_start(const char* options, char* error, size_t error_len) {
  try {
    std::string notes;
    const ctxprof::Status status =
        ctxprof::Profiler::Global()->Start(options != nullptr ? options : "", &notes);
    CopyMessage(status.ok() ? notes : status.message(), error, error_len);
    return ToCode(status);
  } catch (const std::exception& e) {
    CopyMessage(e.what(), error, error_len);
    return CTXPROF_EUNAVAIL;
  }
}

int ctxprof_stop(void) {
  try {
    return ToCode(ctxprof::Profiler::Global()->Stop());
  } catch (const std::exception&) {
    return CTXPROF_EUNAVAIL;
  }
}

int ctxprof_dump(const char* path) {
  if (path == nullptr || path[0] == '\0') return CTXPROF_EINVAL;
  try {
    // By the extension: cannot fail.
    const ctxprof::DumpFormat format = ctxprof::ParseDumpFormat("", path).value();
    return ToCode(ctxprof::Profiler::Global()->Dump(path, format));
  } catch (const std::exception&) {
    return CTXPROF_EUNAVAIL;
  }
}

int ctxprof_register_attributes(const char* const* names, int count) {
  if (count < 0 || (count > 0 && names == nullptr)) return CTXPROF_EINVAL;
  try {
    std::vector<std::string> list;
    for (int i = 0; i < count; ++i) {
      if (names[i] == nullptr) return CTXPROF_EINVAL;
      list.emplace_back(names[i]);
    }
    return ToCode(ctxprof::Profiler::Global()->RegisterAttributes(list));
  } catch (const std::exception&) {
    return CTXPROF_EUNAVAIL;
  }
}

int ctxprof_set_attribute(int slot, const char* value) {
  try {
    return ToCode(ctxprof::ThreadContext::SetAttribute(slot, value));
  } catch (const std::exception&) {
    return CTXPROF_EUNAVAIL;
  }
}

void ctxprof_set_trace_context(uint64_t trace_hi, uint64_t trace_lo, uint64_t span_id) {
  ctxprof::ThreadContext::SetTrace(trace_hi, trace_lo, span_id);
}

void ctxprof_clear_context(void) { ctxprof::ThreadContext::Clear(); }

void ctxprof_set_span_timing(int enabled) { ctxprof::ThreadContext::SetSpanTiming(enabled != 0); }

uint64_t ctxprof_span_ticks(void) { return ctxprof::SpanTicks(); }

}  // extern "C"
