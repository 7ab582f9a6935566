// A TCP connection: the executor's half. It frames messages into chunks (wire.h), writes them
// to the link's sockets (straight from the caller's buffer while nothing is queued, else copied
// into the outbound rings), and reads, checks and hands out what arrives (link.h). recvInto()
// reads the payload of chunks of 16 KiB and more straight into the destination: the header
// alone first (32 bytes), then the payload, never a byte beyond the chunk; smaller chunks come
// through the inbound ring, header and payload in one read.
//
// A message is done for the sender once every byte was written to a socket (sendDone), not
// merely staged: the communicator may be destroyed right after its last collective, and
// bytes still in a ring would be lost with it, while bytes in the kernel still reach the peer.
// A message of 0 bytes puts nothing on the wire (the executor never polls one).
#pragma once

#include <memory>

#include "transports/core/message.h"
#include "transports/core/transport.h"
#include "transports/tcp/io_thread.h"
#include "transports/tcp/link.h"
#include "transports/tcp/wire.h"

namespace trnccl::transport::tcp {

class TcpConnection final : public Connection {
 public:
  // `bufferBytes`: what bufferBytes() reports (the link's outbound rings hold that much).
  TcpConnection(std::shared_ptr<IoThread> io, std::shared_ptr<Link> link, size_t bufferBytes);
  ~TcpConnection() override;  // closes the sockets on the I/O thread, synchronously

  Status beginSend(uint64_t tag, size_t bytes) override;
  Result<size_t> sendSome(const void* src, size_t bytes) override;
  Result<bool> sendDone() override;
  Status beginRecv(uint64_t tag, size_t bytes) override;
  Result<size_t> recvSome(size_t max, const Consumer& consume) override;
  Result<size_t> recvInto(std::byte* dst, size_t max) override;
  size_t bufferBytes() const override { return bufferBytes_; }
  Status checkPeer() override;
  void wakeFds(std::vector<int>& fds) const override;
  void woke() override;
  void armDoorbell() override;
  // The link's failure or liveness timeout, after looking for a reset or end of file on its
  // sockets (nobody reads a socket while no message is expected on it).
  Status checkLink() override {
    TRN_TRY(link_->probe());
    return link_->liveness();
  }
  int peer() const override { return link_->peer(); }
  const char* transportName() const override { return "tcp"; }

  size_t sockets() const { return link_->streams(); }
  // The I/O thread this connection's sockets run on (tests stall it to silence a peer).
  IoThread& ioThread() const { return *io_; }

 private:
  // The chunk of a message of `messageBytes` that holds byte `position`.
  struct Chunk {
    size_t stream = 0;
    uint64_t offset = 0;  // of the chunk in the message
    uint64_t bytes = 0;
  };
  Chunk chunkAt(uint64_t position, uint64_t messageBytes) const;

  size_t stage(size_t stream, const std::byte* src, size_t bytes);
  Result<size_t> receive(size_t max, const Consumer* consume, std::byte* dst);
  Result<bool> readHeader(const Chunk& chunk, bool alone);
  Status checkHeader(const FrameHeader& header, const Chunk& chunk) const;
  size_t handOut(size_t stream, size_t bytes, const Consumer& consume);
  // The error when stream `s` can no longer deliver what the current message needs, if so.
  Status starved(size_t s, size_t need);

  std::shared_ptr<IoThread> io_;  // declared first: outlives the link's sockets
  std::shared_ptr<Link> link_;
  const size_t bufferBytes_;

  MessageState send_;
  bool headerStaged_ = false;  // the header of the chunk at send_.moved() is in its ring

  MessageState recv_;
  bool headerSeen_ = false;  // the header of the chunk at recv_.moved() was checked
};

}  // namespace trnccl::transport::tcp
