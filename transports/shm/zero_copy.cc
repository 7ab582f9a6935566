#include "transports/shm/zero_copy.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <string>

namespace trnccl::transport::shm {

ArenaCache::~ArenaCache() {
  for (auto& [key, mapping] : mappings_) {
    ::munmap(const_cast<std::byte*>(mapping.base), mapping.bytes);
  }
}

Result<const std::byte*> ArenaCache::map(pid_t pid, int fd, size_t bytes) {
  std::lock_guard lock(mutex_);
  auto it = mappings_.find({pid, fd});
  if (it != mappings_.end() && it->second.bytes == bytes) return it->second.base;
  std::string path = fmt::format("/proc/{}/fd/{}", pid, fd);
  int local = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (local < 0) {
    return systemError("shm: cannot open the device arena {} of pid {}: {}", path, pid,
                       std::strerror(errno));
  }
  void* base = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, local, 0);
  int err = errno;
  ::close(local);  // the mapping keeps the memfd alive
  if (base == MAP_FAILED) {
    return systemError("shm: cannot map {} bytes of the device arena {}: {}", bytes, path,
                       std::strerror(err));
  }
  if (it != mappings_.end()) {
    ::munmap(const_cast<std::byte*>(it->second.base), it->second.bytes);
    mappings_.erase(it);
  }
  mappings_[{pid, fd}] = Mapping{static_cast<const std::byte*>(base), bytes};
  return static_cast<const std::byte*>(base);
}

Status cmaRead(pid_t pid, uint64_t remote, std::byte* dst, size_t bytes, int peerRank) {
  size_t done = 0;
  while (done < bytes) {
    iovec local{dst + done, bytes - done};
    iovec from{reinterpret_cast<void*>(remote + done), bytes - done};
    ssize_t n = ::process_vm_readv(pid, &local, 1, &from, 1, 0);
    if (n <= 0) {
      Code code = errno == ESRCH ? Code::kRemoteError : Code::kSystemError;
      return Status(code,
                    fmt::format("shm: process_vm_readv of {} bytes at {:#x} from rank {} (pid {}) "
                                "failed: {}",
                                bytes - done, remote + done, peerRank, pid,
                                n == 0 ? "no bytes read" : std::strerror(errno)),
                    peerRank);
    }
    done += static_cast<size_t>(n);
  }
  return Status::ok();
}

bool probeCma(pid_t pid, uint64_t remote, uint64_t expected) {
  uint64_t value = 0;
  iovec local{&value, sizeof(value)};
  iovec from{reinterpret_cast<void*>(remote), sizeof(value)};
  return ::process_vm_readv(pid, &local, 1, &from, 1, 0) == sizeof(value) && value == expected;
}

bool probeProcFd(pid_t pid, int fd) {
  std::string path = fmt::format("/proc/{}/fd/{}", pid, fd);
  int local = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (local < 0) return false;
  ::close(local);
  return true;
}

uint64_t processNonce() {
  // Drawn once per process; a fork()ed child must draw its own, hence the pid check.
  static std::mutex mutex;
  static pid_t owner = 0;
  static uint64_t nonce = 0;
  std::lock_guard lock(mutex);
  if (owner != ::getpid()) {
    std::random_device device;
    nonce = (uint64_t{device()} << 32) ^ device() ^ static_cast<uint64_t>(::getpid());
    owner = ::getpid();
  }
  return nonce;
}

}  // namespace trnccl::transport::shm
