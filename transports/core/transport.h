// The transport interface: how bytes move between two ranks, and nothing about which
// collective moves them (DESIGN.md). Shared memory, TCP and libfabric implement it.
//
// A Connection joins this rank to one peer in both directions. Each direction carries one
// message at a time, in order: begin it, move it piece by piece with non-blocking calls, and
// poll until done. Nothing here blocks; the caller (the schedule executor) polls every active
// connection, and when none made progress it waits on the communicator's Doorbell, which every
// transport rings when something arrives or room frees up. Receiving hands the bytes to a
// consumer in place (a FIFO slot, a mapped peer buffer), so a reduction reads straight out of
// the transport's memory without a staging copy.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/memory_location.h"
#include "common/status.h"
#include "common/wait.h"
#include "transports/core/registered.h"

namespace trnccl::transport {

// What each rank tells every other rank at init; fixed-size, exchanged by the bootstrap.
struct PeerInfo {
  int32_t rank = -1;
  int32_t device = -1;
  int32_t pid = 0;
  int32_t reserved = 0;
  uint64_t hostHash = 0;  // equal for ranks of one host (or one emulated instance)
  uint64_t bootId = 0;    // equal for ranks sharing a kernel (same machine, possibly netns)
  std::array<char, 64> hostname{};
};

// Out-of-band collectives over the bootstrap, for transports to exchange addresses at setup.
class OobChannel {
 public:
  virtual ~OobChannel() = default;
  // Every rank contributes `mine` (same size on every rank); returns all contributions, rank
  // order, concatenated.
  virtual Result<std::vector<std::byte>> allGather(std::span<const std::byte> mine) = 0;
  virtual Status barrier() = 0;
};

// What a transport gets to set up its connections. Setup is collective: every rank calls
// connect() of every enabled transport, in the same order, even with no peers for it.
struct SetupContext {
  int rank = 0;
  int nranks = 0;
  uint64_t commHash = 0;        // unique per communicator within the job; names segments
  std::vector<PeerInfo> peers;  // indexed by rank
  OobChannel* oob = nullptr;
  Doorbell* bell = nullptr;  // this rank's doorbell: ring it when a connection has news
  // Where a buffer lives if it is emulated device memory (zero-copy mapping, NIC registration);
  // empty: every buffer is treated as host memory.
  MemoryLocator locate;
  // The buffers registered with the communicator (trncclCommRegister); it outlives the
  // connections. nullptr: none ever are.
  const RegisteredMemory* registered = nullptr;
  Deadline deadline = Deadline::never();
};

// Called with consecutive pieces of a received message: `offset` within the message, `data`
// valid only during the call.
using Consumer = std::function<void(size_t offset, const std::byte* data, size_t bytes)>;

class Connection {
 public:
  virtual ~Connection() = default;

  // Starts the next outgoing message. `tag` identifies (communicator, sequence, step); the
  // receiver checks it, so a mismatched collective fails instead of corrupting data.
  virtual Status beginSend(uint64_t tag, size_t bytes) = 0;
  // Offers the next `bytes` of the current message (bytes at `src` may be read until
  // sendDone()); returns how many were taken, 0 when the peer has no room yet.
  virtual Result<size_t> sendSome(const void* src, size_t bytes) = 0;
  // True once the whole message was taken and no byte of the source is still needed.
  virtual Result<bool> sendDone() = 0;

  // Starts the next incoming message; it must carry `tag` and `bytes`.
  virtual Status beginRecv(uint64_t tag, size_t bytes) = 0;
  // Hands up to `max` available bytes of the current message to `consume`; returns how many.
  virtual Result<size_t> recvSome(size_t max, const Consumer& consume) = 0;
  // recvSome for a consumer that only copies: byte k of the message goes to dst[k]. A transport
  // may put the bytes there itself, without staging them (TCP reads the socket into dst; ofi
  // posts receives there), so from the first call on it may write any byte of dst[0, bytes)
  // until the message is complete: pass the same dst every time.
  virtual Result<size_t> recvInto(std::byte* dst, size_t max) {
    return recvSome(max, [dst](size_t offset, const std::byte* data, size_t bytes) {
      std::copy(data, data + bytes, dst + offset);
    });
  }

  // Bytes a sender can hand over before the peer must receive any (its buffer space). Pipelined
  // algorithms keep each step's slice at a quarter of this, so a ring of senders can never all
  // wait for room at once.
  virtual size_t bufferBytes() const { return 256 * 1024; }

  // An error if the peer is known to be gone (process exited, socket reset).
  virtual Status checkPeer() { return Status::ok(); }
  // An error if this rank's own link to the peer failed (a reset, a liveness timeout), whatever
  // the connection is used for now. The executor checks it on every connection of the
  // communicator, at a low rate, while it waits on others. A host-local transport has no link
  // of its own to lose (a dead local peer reaches every rank through the bootstrap): OK.
  virtual Status checkLink() { return Status::ok(); }

  // Waiting (waiting.h). Descriptors that turn readable (poll(2) POLLIN) when this connection
  // has news, so that a waiter whose connections all have some blocks on them instead of the
  // doorbell: a TCP connection's socket, which the executor reads itself. None (the default):
  // the connection rings the doorbell.
  virtual void wakeFds(std::vector<int>& fds) const { (void)fds; }
  // After poll(2) saw one of wakeFds() readable: clears what is now noticed.
  virtual void woke() {}
  // Before a waiter sleeps on the doorbell instead: news from now on must ring it.
  virtual void armDoorbell() {}
  virtual int peer() const = 0;
  virtual const char* transportName() const = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const = 0;
  // Whether this transport can join the two ranks (e.g. shm: same host).
  virtual bool canConnect(const PeerInfo& self, const PeerInfo& peer) const = 0;
  // Collective over the communicator: connects to each rank in `peerRanks` (those for which
  // this transport was chosen; may be empty). Result is indexed like peerRanks.
  virtual Result<std::vector<std::unique_ptr<Connection>>> connect(
      SetupContext& ctx, const std::vector<int>& peerRanks) = 0;
};

}  // namespace trnccl::transport
