// Connection establishment of the TCP transport (wire.h for the handshake).
//
// Every rank opens a listener when some lower-ranked peer will connect to it, publishes it
// with the first oob allGather (with its setup status and liveness timeout), dials each
// higher-ranked peer's listener (nsocks data sockets and one control socket), accepts its
// lower-ranked peers, and reports success with a second allGather, so all ranks fail
// together. Both exchanges happen on every rank, with or without tcp peers.
//
// The listener (transports/net/listener.h) never trusts a connection: it reads one Handshake
// under kHandshakeTimeout and closes the socket on anything wrong (magic, version,
// communicator, rank, socket index, duplicate), then keeps accepting; at most
// kMaxPendingHandshakes are read at once, so a flood of silent connections costs a bounded
// number of descriptors and never stops the accept loop for longer than the timeout. The
// connector checks the acceptor's answer the same way. Everything ends at ctx.deadline.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "transports/core/congestion.h"  // congestionControl: the data sockets' rule
#include "transports/core/transport.h"

namespace trnccl::transport::tcp {

inline constexpr auto kHandshakeTimeout = std::chrono::seconds(5);
inline constexpr int kMaxPendingHandshakes = 32;

struct PeerSockets {
  int peer = -1;
  std::vector<boost::asio::ip::tcp::socket> sockets;    // data; handshake done, options set
  std::vector<std::string> names;                       // the peer's address of each socket
  std::optional<boost::asio::ip::tcp::socket> control;  // the heartbeats' socket
  std::chrono::milliseconds heartbeat{0};               // the pair's interval (liveness.h); 0: none
  std::chrono::milliseconds timeout{0};                 // this rank's liveness timeout; 0: no check
};

// Sockets per peer from TRNCCL_SOCKET_NSOCKS (default kDefaultSockets), or an error.
Result<uint32_t> socketsPerPeer();

// SO_SNDBUF and SO_RCVBUF of every data socket from TRNCCL_SOCKET_BUFSIZE (bytes; 0, the
// default: the kernel's autotuning, as NCCL and Gloo leave it), or an error.
Result<int> socketBufferBytes();

// Collective. Connects to every rank in `peers` and returns their sockets, indexed like
// `peers`, moved onto `target` (which may be null when `peers` is empty).
Result<std::vector<PeerSockets>> establish(SetupContext& ctx, const std::vector<int>& peers,
                                           boost::asio::io_context* target);

}  // namespace trnccl::transport::tcp
