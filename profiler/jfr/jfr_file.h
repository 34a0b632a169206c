// JfrFile: a recording file opened for appending and in-place header patches, where every
// write is checked (short writes, EINTR, ENOSPC, EFBIG) and every error names the path.
//
// Files are created with mode 0600 (recordings contain method names and context values).
// A process that writes with RLIMIT_FSIZE set must ignore SIGXFSZ to get EFBIG as an error
// instead of being killed; the writer does not change signal dispositions.
//
// Thread safety: none; used by the writer thread only.
#ifndef CTXPROF_PROFILER_JFR_JFR_FILE_H_
#define CTXPROF_PROFILER_JFR_JFR_FILE_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace ctxprof {

class JfrFile {
 public:
  JfrFile() = default;
  ~JfrFile();
  JfrFile(const JfrFile&) = delete;
  JfrFile& operator=(const JfrFile&) = delete;

  // Creates (or truncates) `path`, mode 0600.
  bool Open(const std::string& path, std::string* error);
  bool is_open() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }
  // The errno of the last failed call (0 before any failure); its *error says it in words.
  int os_error() const { return os_error_; }
  // Bytes appended so far (the file's size).
  uint64_t size() const { return size_; }

  bool Append(const void* data, size_t length, std::string* error);
  // Overwrites bytes that were already appended.
  bool WriteAt(uint64_t offset, const void* data, size_t length, std::string* error);
  // Cuts the file back to `size` bytes (<= size()), e.g. to take back a partial append.
  bool Truncate(uint64_t size, std::string* error);
  // Closes the descriptor; reports a close() error.
  bool Close(std::string* error);

 private:
  // Records `error_number` as os_error() and returns the message naming the path.
  std::string Fail(const char* operation, uint64_t offset, int error_number);

  int fd_ = -1;
  int os_error_ = 0;
  std::string path_;
  uint64_t size_ = 0;
};

}  // namespace ctxprof

#endif  // CTXPROF_PROFILER_JFR_JFR_FILE_H_
