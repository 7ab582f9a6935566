#include "transports/tcp/tcp_transport.h"

#include <algorithm>

#include "common/env.h"
#include "common/log.h"
#include "transports/tcp/io_thread.h"
#include "transports/tcp/link.h"
#include "transports/tcp/setup.h"
#include "transports/tcp/tcp_connection.h"

namespace trnccl::transport::tcp {
namespace {

constexpr int64_t kDefaultBufferBytes = 4 << 20;
constexpr size_t kMinRingBytes = 64 << 10;
constexpr size_t kRingAlign = 4096;

// Bytes of each socket's ring for a peer joined by `sockets` sockets.
size_t ringBytes(size_t sockets) {
  int64_t total = env::getInt("TRNCCL_TCP_BUFFER_BYTES", kDefaultBufferBytes);
  if (total <= 0) {
    TRN_WARN(kNet, "tcp: TRNCCL_TCP_BUFFER_BYTES={} is not positive; using {}", total,
             kDefaultBufferBytes);
    total = kDefaultBufferBytes;
  }
  size_t per = (static_cast<size_t>(total) / sockets + kRingAlign - 1) / kRingAlign * kRingAlign;
  return std::max(per, kMinRingBytes);
}

class TcpTransport final : public Transport {
 public:
  const char* name() const override { return "tcp"; }
  bool canConnect(const PeerInfo&, const PeerInfo&) const override { return true; }

  Result<std::vector<std::unique_ptr<Connection>>> connect(
      SetupContext& ctx, const std::vector<int>& peerRanks) override {
    if (!peerRanks.empty() && !io_) io_ = std::make_shared<IoThread>();
    Result<std::vector<PeerSockets>> established =
        establish(ctx, peerRanks, io_ ? &io_->context() : nullptr);
    if (!established) return established.status();
    std::vector<std::unique_ptr<Connection>> connections;
    for (PeerSockets& peer : *established) {
      size_t sockets = peer.sockets.size();
      size_t ring = ringBytes(sockets);
      auto link = std::make_shared<Link>(
          io_->context(), peer.peer, ctx.bell, ring, std::move(peer.sockets), std::move(peer.names),
          std::move(*peer.control), Link::Liveness{peer.heartbeat, peer.timeout});
      connections.push_back(std::make_unique<TcpConnection>(io_, std::move(link), ring * sockets));
    }
    return connections;
  }

 private:
  std::shared_ptr<IoThread> io_;  // shared with the connections, which may outlive us
};

}  // namespace
}  // namespace trnccl::transport::tcp

namespace trnccl::transport {

std::unique_ptr<Transport> makeTcpTransport() { return std::make_unique<tcp::TcpTransport>(); }

}  // namespace trnccl::transport
