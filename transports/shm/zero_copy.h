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

// Pieces of at least this many bytes go by descriptor (TRNCCL_SHM_ZCOPY_BYTES's default): half
// the pipeline slice of the collectives over shm (64 KiB, a quarter of Connection::bufferBytes()),
// so every full slice of a ring or chain, sent or forwarded, and every partial one of at least
// half a slice, is read in place by the peer: one copy where the FIFO makes two (issue 14: a
// 2-rank 64 KiB all-gather, 32 KiB per rank, ran ~2x faster so; transports/shm/README.md).
// Not lower: a descriptor makes the sender wait for the receiver's acknowledgement before the
// call may complete, which cost more than the copy it saves at 1-8 KiB (the registered-floor
// measurement below). Device memory of another process and ranks of one process only: host
// memory of another process goes by descriptor (CMA) only from kCmaMinBytes.
inline constexpr size_t kDefaultZcopyBytes = 32 << 10;

// A registered piece (trncclCommRegister) goes by descriptor from this size up (or from
// TRNCCL_SHM_ZCOPY_BYTES if set below kDefaultZcopyBytes), also when TRNCCL_SHM_ZCOPY_BYTES raises
// the threshold of unregistered pieces (registering asks for in-place reads). Below it the FIFO is
// faster: a descriptor makes the sender wait for the receiver's acknowledgement before the call may
// complete (quiet machine, 2 ranks, all-reduce on trncclMemAlloc memory, -R 1 against -R 0:
// 1 KiB 2x slower, 8 KiB 17-19 against 12-15 us, 64 KiB 28-32 against 31-36 us;
// transports/shm/README.md). Where registration still matters: host memory of another
// process between the threshold and kCmaMinBytes (process_vm_readv for a registered piece
// only), and pieces above the floor when the threshold was raised.
inline constexpr size_t kRegisteredMinBytes = 64 << 10;

// Cross-memory attach is not one copy but two (the kernel's into a scratch buffer, then the
// consumer's), like the FIFO, only both on the receiver: a host piece goes by CMA from this
// size (or the threshold, if larger) only, a registered one whatever its size.
inline constexpr size_t kCmaMinBytes = 256 << 10;

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
