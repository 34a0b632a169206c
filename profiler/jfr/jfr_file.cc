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

std::string JfrFile::Fail(const char* operation, uint64_t offset, int error_number) {
  os_error_ = error_number;
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
  return message;
}

bool JfrFile::Open(const std::string& path, std::string* error) {
  path_ = path;
  size_ = 0;
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd_ < 0) {
    *error = Fail("create", UINT64_MAX, errno);
    return false;
  }
  // O_CREAT's mode is filtered by the umask and does not apply to an existing file.
  if (::fchmod(fd_, 0600) != 0) {
    *error = Fail("set mode 0600 on", UINT64_MAX, errno);
    return false;
  }
  return true;
}

bool JfrFile::Append(const void* data, size_t length, std::string* error) {
  if (!WriteAt(size_, data, length, error)) return false;
  size_ += length;
  return true;
}

bool JfrFile::WriteAt(uint64_t offset, const void* data, size_t length, std::string* error) {
  const char* bytes = static_cast<const char*>(data);
  size_t done = 0;
  while (done < length) {
    const ssize_t n = ::pwrite(fd_, bytes + done, length - done, offset + done);
    if (n < 0) {
      if (errno == EINTR) continue;
      *error = Fail("write", offset + done, errno);
      return false;
    }
    if (n == 0) {
      *error = Fail("write", offset + done, EIO);
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

bool JfrFile::Truncate(uint64_t size, std::string* error) {
  while (::ftruncate(fd_, static_cast<off_t>(size)) != 0) {
    if (errno == EINTR) continue;
    *error = Fail("truncate", size, errno);
    return false;
  }
  size_ = size;
  return true;
}

bool JfrFile::Close(std::string* error) {
  if (fd_ < 0) return true;
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    *error = Fail("close", UINT64_MAX, errno);
    return false;
  }
  return true;
}

}  // namespace ctxprof
