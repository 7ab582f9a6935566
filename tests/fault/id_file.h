// The unique id handed out of band through a file, as a launcher without MPI would: rank 0 makes
// it with trncclGetUniqueId (without TRNCCL_COMM_ID: a fresh root on a port the kernel assigns)
// and publishes it atomically (write, then rename); the other ranks wait for the file. Files
// work across the network namespaces of the multi-host tests, which share the file system.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "trnccl/trnccl.h"

namespace trnccl::fault {

// trncclSuccess, or why not: the id could not be made, written, or read before `timeout`.
inline trncclResult_t idThroughFile(const std::string& path, int rank, trncclUniqueId* id,
                                    std::chrono::milliseconds timeout) {
  if (rank == 0) {
    if (trncclResult_t r = trncclGetUniqueId(id); r != trncclSuccess) return r;
    std::string tmp = path + ".tmp";
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    bool ok = fd >= 0 && ::write(fd, id->internal, sizeof(id->internal)) ==
                             static_cast<ssize_t>(sizeof(id->internal));
    if (fd >= 0) ::close(fd);
    return ok && std::rename(tmp.c_str(), path.c_str()) == 0 ? trncclSuccess : trncclSystemError;
  }
  auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      ssize_t n = ::read(fd, id->internal, sizeof(id->internal));
      ::close(fd);
      return n == static_cast<ssize_t>(sizeof(id->internal)) ? trncclSuccess : trncclSystemError;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return trncclTimeout;
}

}  // namespace trnccl::fault
