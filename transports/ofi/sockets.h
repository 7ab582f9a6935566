// The congestion control of libfabric's TCP connections (README.md, "Session 16").
//
// libfabric's TCP providers (net, tcp under ofi_rxm, tcp from 1.18) open their sockets
// themselves and offer no option for TCP_CONGESTION, so they keep the system's default, BBR
// here, which over loopback paces and fires spurious tail-loss probes (transports/core/
// congestion.h): a 2-16 MiB all-reduce took about 2x our tcp transport's time. The connections
// exist only once a peer was first sent to (an RDM endpoint connects on demand), so after that,
// this finds exactly the endpoint's connections among the process's descriptors and gives each
// the congestion control of the rule every transport shares (congestionControl: reno on this
// host unless TRNCCL_SOCKET_CONGESTION says otherwise). A TCP socket is one of them when it is
// connected and either its local address is the endpoint's own name (fi_getname: the provider
// accepted it on its listening socket, so a peer dialed us) or its peer's address is a peer's
// endpoint name (from the address exchange: we dialed it). Every other socket of the process
// (the heartbeat endpoint's, the tcp transport's, the bootstrap's, the user's) matches neither
// and is never touched.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <span>
#include <vector>

namespace trnccl::transport::ofi {

class ProviderSockets {
 public:
  // For an endpoint whose names have address format `addrFormat` (fi_info::addr_format) and
  // which is named `self`. Inactive when the names are not socket addresses (shm, efa) or the
  // setting (TRNCCL_SOCKET_CONGESTION) leaves every socket alone.
  ProviderSockets(uint32_t addrFormat, std::span<const std::byte> self);

  bool active() const { return active_; }
  // A peer's endpoint name, as inserted into the address vector.
  void addPeer(std::span<const std::byte> name);
  // Sets the congestion control on each of the endpoint's connections open now (whether or not
  // an earlier call set it: it may have reconnected). Returns how many took it.
  int apply(int rank) const;

 private:
  bool matches(const sockaddr_storage& local, const sockaddr_storage& remote) const;

  bool active_ = false;
  const char* setting_ = nullptr;
  sockaddr_storage self_{};
  std::vector<sockaddr_storage> peers_;
};

}  // namespace trnccl::transport::ofi
