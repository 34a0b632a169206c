// Status: the outcome of a profiler call that can fail (start, stop, dump, attribute
// registration, the start steps below them, the JFR files' I/O and reading): a code that says
// what kind of failure it is, the OS error number when a system call failed, and a message that
// names the input and the fix. A leaf: it depends on nothing of ours, so every layer, the JFR
// format leaf included, returns it.
//
// Messages are neutral to the front end: they speak of options ("option 'file': ..."), paths
// and commands, never of one API's function names. Each front end (the C API, the Java API, the
// JVM agent) maps the code to its own form (CTXPROF_E* codes, exception types, a "ctxprof:"
// line) and may put its own verb in front of the message ("start: ...").
//
// StatusOr<T>: a value or the Status that says why there is none.
//
// Thread safety: plain values; a const Status may be read from any thread.
#ifndef CTXPROF_PROFILER_BASE_STATUS_H_
#define CTXPROF_PROFILER_BASE_STATUS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace ctxprof {

enum class StatusCode : uint8_t {
  kOk,
  kInvalidArgument,  // a bad option, value or argument: the caller must change it
  kWrongState,       // the call does not fit the profiler's state (already running, not running)
  kIo,               // a file or folder could not be created, read, written or closed
  kUnavailable,      // the system refused a resource: perf events, timers, signals, memory,
                     // threads; another engine, signal or limit may work
};

class Status {
 public:
  Status() = default;  // ok

  static Status InvalidArgument(std::string message) {
    return Status(StatusCode::kInvalidArgument, std::move(message), 0);
  }
  static Status WrongState(std::string message) {
    return Status(StatusCode::kWrongState, std::move(message), 0);
  }
  // `os_error` is the errno of the failed call; `message` already says it in words.
  static Status Io(std::string message, int os_error) {
    return Status(StatusCode::kIo, std::move(message), os_error);
  }
  static Status Unavailable(std::string message, int os_error) {
    return Status(StatusCode::kUnavailable, std::move(message), os_error);
  }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  // The errno of the system call that failed; 0 when the failure is not one call's (a bad
  // option, a foreign signal handler, several refused engines with different errors).
  int os_error() const { return os_error_; }
  const std::string& message() const { return message_; }

  // The same failure with "<context>: " in front of the message (e.g. the option it came from).
  Status Prefixed(const std::string& context) const {
    return Status(code_, context + ": " + message_, os_error_);
  }

 private:
  Status(StatusCode code, std::string message, int os_error)
      : code_(code), os_error_(os_error), message_(std::move(message)) {}

  StatusCode code_ = StatusCode::kOk;
  int os_error_ = 0;
  std::string message_;
};

template <typename T>
class StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit, as a return value
  // `status` must not be ok: a StatusOr without a value always says why.
  StatusOr(Status status) : status_(std::move(status)) {}  // NOLINT: implicit, as above

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() { return *value_; }
  const T& value() const { return *value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_BASE_STATUS_H_
