// Owns a file descriptor: closes it on scope exit unless release()d, so that code which opens
// an fd and may fail before handing it on (a memfd, a shm segment, a pidfd) leaks nothing on
// any error path.
#pragma once

#include <unistd.h>

#include <utility>

namespace trnccl {

class FdGuard {
 public:
  FdGuard() = default;
  explicit FdGuard(int fd) : fd_(fd) {}
  ~FdGuard() { reset(); }
  FdGuard(FdGuard&& other) noexcept : fd_(other.release()) {}
  FdGuard& operator=(FdGuard&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  FdGuard(const FdGuard&) = delete;
  FdGuard& operator=(const FdGuard&) = delete;

  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  // Hands the fd to the caller, who closes it.
  int release() { return std::exchange(fd_, -1); }
  // Closes the fd held (if any) and holds `fd` instead.
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace trnccl
