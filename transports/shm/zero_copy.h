// Reading a sender's memory in place: the emulated NeuronLink DMA path of the shm transport.
//
// A sender whose piece is large enough writes a descriptor instead of the bytes. The receiver
// reads the bytes through one of three routes, chosen per peer at setup from what works:
//  - the same process: the raw pointer;
//  - device memory of another process: the device's arena (a memfd), mapped read-only through
//    /proc/<pid>/fd/<fd> and cached per (pid, fd), so a reduction reads the peer's buffer;
//  - host memory of another process: process_vm_readv (cross-memory attach) into a bounded
//    scratch buffer.
// The last two need ptrace-level access to the peer (Yama, containers can forbid it), so
// connect() probes them once and otherwise falls back to copying through the FIFO.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "common/status.h"

namespace trnccl::transport::shm {

// Read-only mappings of peers' device arenas, shared by the connections of one transport.
class ArenaCache {
 public:
  ArenaCache() = default;
  ~ArenaCache();
  ArenaCache(const ArenaCache&) = delete;
  ArenaCache& operator=(const ArenaCache&) = delete;

  // The base of `pid`'s arena behind its descriptor `fd`, mapping it on first use. Keyed on
  // (pid, fd, bytes): an arena lives as long as its device, so its fd is not reused meanwhile.
  Result<const std::byte*> map(pid_t pid, int fd, size_t bytes);

 private:
  struct Mapping {
    const std::byte* base;
    size_t bytes;
  };
  std::mutex mutex_;
  std::map<std::pair<pid_t, int>, Mapping> mappings_;  // guarded by mutex_
};

// Reads `bytes` at `remote` in process `pid` into `dst` with process_vm_readv.
Status cmaRead(pid_t pid, uint64_t remote, std::byte* dst, size_t bytes, int peerRank);

// Setup probes, run by a receiver against a sender in another process.
bool probeCma(pid_t pid, uint64_t remote, uint64_t expected);
bool probeProcFd(pid_t pid, int fd);

// A number identifying this process, unlike a pid also across pid namespaces.
uint64_t processNonce();

}  // namespace trnccl::transport::shm
