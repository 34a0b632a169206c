#include "profiler/jfr/jfr_file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ctxprof {

JfrFile::~JfrFile() {
  if (fd_ >= 0) ::close(fd_);
}

Status JfrFile::Fail(const char* operation, uint64_t offset, int error_number) const {
  std::string message = std::string("cannot ") + operation + " recording file " + path_;
  if (offset != UINT64_MAX) message += " at offset " + std::to_string(offset);
  message += ": ";
  message += strerror(error_number);
  if (error_number == ENOSPC || error_number == EFBIG || error_number == EDQUOT) {
    message += " (free disk space or raise the file size limit, or lower maxsize/chunksize)";
  } else if (error_number == ENOENT) {
    message += " (create the folder first)";
  } else if (error_number == EACCES || error_number == EROFS) {
    message += " (choose a writable location)";
  }
  return Status::Io(std::move(message), error_number);
}

Status JfrFile::Open(const std::string& path) {
  path_ = path;
  size_ = 0;
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd_ < 0) return Fail("create", UINT64_MAX, errno);
  // O_CREAT's mode is filtered by the umask and does not apply to an existing file.
  if (::fchmod(fd_, 0600) != 0) return Fail("set mode 0600 on", UINT64_MAX, errno);
  return Status();
}

Status JfrFile::Append(const void* data, size_t length) {
  Status written = WriteAt(size_, data, length);
  if (written.ok()) size_ += length;
  return written;
}

Status JfrFile::WriteAt(uint64_t offset, const void* data, size_t length) {
  const char* bytes = static_cast<const char*>(data);
  size_t done = 0;
  while (done < length) {
    const ssize_t n = ::pwrite(fd_, bytes + done, length - done, offset + done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Fail("write", offset + done, errno);
    }
    if (n == 0) return Fail("write", offset + done, EIO);
    done += static_cast<size_t>(n);
  }
  return Status();
}

Status JfrFile::Truncate(uint64_t size) {
  while (::ftruncate(fd_, static_cast<off_t>(size)) != 0) {
    if (errno == EINTR) continue;
    return Fail("truncate", size, errno);
  }
  size_ = size;
  return Status();
}

Status JfrFile::Close() {
  if (fd_ < 0) return Status();
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) return Fail("close", UINT64_MAX, errno);
  return Status();
}

}  // namespace ctxprof
