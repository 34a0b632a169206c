// JfrFile: a recording file opened for appending and in-place header patches, where every
// write is checked (short writes, EINTR, ENOSPC, EFBIG) and every error names the path.
//
// Files are created with mode 0600 (recordings contain method names and context values).
// A process that writes with RLIMIT_FSIZE set must ignore SIGXFSZ to get EFBIG as an error
// instead of being killed; the writer does not change signal dispositions.
//
// Failure: Status::Io naming the path, with the failed call's errno as os_error().
//
// Thread safety: none; used by the writer thread only.
#ifndef CTXPROF_PROFILER_JFR_JFR_FILE_H_
#define CTXPROF_PROFILER_JFR_JFR_FILE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "profiler/base/status.h"

namespace ctxprof {

class JfrFile {
 public:
  JfrFile() = default;
  ~JfrFile();
  JfrFile(const JfrFile&) = delete;
  JfrFile& operator=(const JfrFile&) = delete;

  // Creates (or truncates) `path`, mode 0600.
  Status Open(const std::string& path);
  bool is_open() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }
  // Bytes appended so far (the file's size).
  uint64_t size() const { return size_; }

  Status Append(const void* data, size_t length);
  // Overwrites bytes that were already appended.
  Status WriteAt(uint64_t offset, const void* data, size_t length);
  // Cuts the file back to `size` bytes (<= size()), e.g. to take back a partial append.
  Status Truncate(uint64_t size);
  // Closes the descriptor; reports a close() error.
  Status Close();

 private:
  // The failure of `operation` at `offset` (UINT64_MAX: none), with a hint for the usual causes.
  Status Fail(const char* operation, uint64_t offset, int error_number) const;

  int fd_ = -1;
  std::string path_;
  uint64_t size_ = 0;
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_JFR_JFR_FILE_H_
