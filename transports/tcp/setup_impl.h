// The TCP transport's connection setup as a class, shared by setup.cc (the collective steps:
// listen, exchange addresses, connect everything, report, hand the sockets over) and
// handshake.cc (one socket's handshake, accepting or connecting). Private to those two files.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "transports/core/transport.h"
#include "transports/net/listener.h"
#include "transports/tcp/setup.h"
#include "transports/tcp/wire.h"

namespace trnccl::transport::tcp {

// A connection this rank accepted, during its handshake.
struct Inbound {
  std::shared_ptr<net::Incoming> link;
  Handshake hello;  // what the connector sent
  Handshake reply;  // our answer
  size_t slot = 0;
  uint32_t index = 0;
};

// A connection this rank dials, during its handshake.
struct Outbound {
  explicit Outbound(boost::asio::io_context& io) : socket(io), timer(io) {}
  boost::asio::ip::tcp::socket socket;
  boost::asio::steady_timer timer;  // the connect attempt's bound
  Handshake hello;                  // what we send
  Handshake reply;                  // what the acceptor answers
  std::string name;
  size_t slot = 0;
  uint32_t index = 0;
};

class Setup {
 public:
  Setup(SetupContext& ctx, const std::vector<int>& peers);
  Result<std::vector<PeerSockets>> run(boost::asio::io_context* target);

 private:
  // One peer's sockets: nsocks data sockets, then the control socket (index nsocks).
  struct Slot {
    int peer = -1;
    uint32_t nsocks = 0;
    std::chrono::milliseconds heartbeat{0};
    std::vector<std::optional<boost::asio::ip::tcp::socket>> sockets;
    std::vector<std::string> names;
    std::vector<bool> claimed;
  };

  // setup.cc
  Status validate() const;
  Status openListener();
  Status prepareSlots(const std::vector<ListenAddress>& addresses);
  Status connectAll(const std::vector<ListenAddress>& addresses);
  Result<std::vector<PeerSockets>> rehome(boost::asio::io_context& target);
  void place(size_t slot, uint32_t index, boost::asio::ip::tcp::socket socket,
             const std::string& name);
  void fail(Status status);
  std::string missing() const;

  // handshake.cc
  void onIncoming(const std::shared_ptr<net::Incoming>& link);
  void onHello(const std::shared_ptr<Inbound>& in, const boost::system::error_code& ec);
  Status checkHello(const Handshake& hello) const;
  void dial(size_t slot, uint32_t index, const boost::asio::ip::tcp::endpoint& endpoint);
  void onConnected(const std::shared_ptr<Outbound>& out,
                   const boost::asio::ip::tcp::endpoint& endpoint,
                   const boost::system::error_code& ec);
  void onReply(const std::shared_ptr<Outbound>& out, const boost::system::error_code& ec);
  Handshake handshakeFor(const Slot& slot, uint32_t index) const;

  SetupContext& ctx_;
  const std::vector<int>& peers_;
  boost::asio::io_context io_;  // before every socket and timer of the setup: outlives them
  net::Listener listener_;
  boost::asio::steady_timer deadline_{io_};
  uint32_t nsocks_ = 0;
  int bufferBytes_ = 0;                    // TRNCCL_SOCKET_BUFSIZE
  std::chrono::milliseconds liveness_{0};  // this rank's liveness timeout
  std::vector<Slot> slots_;                // indexed like peers_
  std::vector<int> slotOf_;                // by rank; -1: not a tcp peer
  size_t missing_ = 0;                     // sockets not established yet
  bool finished_ = false;
  Status failure_;
};

}  // namespace trnccl::transport::tcp
