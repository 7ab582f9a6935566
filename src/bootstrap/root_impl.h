// The bootstrap root's service as a class, shared by bootstrap_root.cc (listening, check-in,
// writing, failing and closing connections) and root_relay.cc (the allGather relay after
// check-in, and goodbyes). Private to those two files; the interface is bootstrap_root.h.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "bootstrap/bootstrap_root.h"
#include "bootstrap/bootstrap_wire.h"
#include "transports/net/listener.h"

namespace trnccl::bootstrap {

namespace asio = boost::asio;
namespace net = transport::net;
using asio::ip::tcp;
using ErrorCode = boost::system::error_code;

struct Outgoing {
  wire::HeaderBytes header;
  std::shared_ptr<const std::vector<std::byte>> body;
};

// One connection: a newcomer under the listener's handshake deadline until it checks in as a
// rank.
struct Conn {
  explicit Conn(std::shared_ptr<net::Incoming> l) : link(std::move(l)) {}
  tcp::socket& socket() { return link->socket(); }
  bool open() const { return link->isOpen(); }
  const std::string& peer() const { return link->peer(); }

  std::shared_ptr<net::Incoming> link;
  wire::HeaderBytes inHeader{};
  std::vector<std::byte> inBody;
  std::deque<Outgoing> outQueue;
  int rank = -1;  // set once checked in
  bool saidGoodbye = false;
  bool closeAfterWrite = false;
};
using ConnPtr = std::shared_ptr<Conn>;

class RootService::Impl {
 public:
  explicit Impl(uint64_t magic);

  Status bind(const std::string& host, uint16_t port);
  uint16_t port() const { return port_; }
  void run();
  void stop() { io_.stop(); }

 private:
  enum class Phase { kInit, kServing, kDone };

  // bootstrap_root.cc: check-in.
  void onAccept(const std::shared_ptr<net::Incoming>& link);
  void readHello(const ConnPtr& c);
  void onHello(const ConnPtr& c, const wire::Header& h);
  Status checkHello(const wire::Header& h) const;
  void sendTables();
  void onInitTimeout();
  // root_relay.cc: after check-in.
  void readFrame(const ConnPtr& c);
  void onFrame(const ConnPtr& c, const wire::Header& h);
  void onGather(const ConnPtr& c, wire::Type type);
  void completeRound();
  void onGoodbye(const ConnPtr& c);
  // bootstrap_root.cc: writing, failing and closing.
  void onLost(const ConnPtr& c, const std::string& why);
  void reject(const ConnPtr& c, Code code, const std::string& message);
  void failAll(Code code, int peer, const std::string& message);
  void send(const ConnPtr& c, wire::Header h, std::shared_ptr<const std::vector<std::byte>> body);
  void writeNext(const ConnPtr& c);
  void drain(const ConnPtr& c);
  void closeConn(const ConnPtr& c);
  void finish();

  // Declared first so it is destroyed last: handlers it still holds own connections.
  asio::io_context io_;
  net::Listener listener_;
  asio::steady_timer initTimer_;
  asio::steady_timer lingerTimer_;
  uint64_t magic_;
  uint16_t port_ = 0;
  std::string address_;
  std::chrono::milliseconds initTimeout_{};

  Phase phase_ = Phase::kInit;
  int nranks_ = 0;  // from the first accepted hello; 0 while nobody is checked in
  int checkedIn_ = 0;
  int finished_ = 0;  // ranks that said goodbye or disconnected after init
  std::vector<ConnPtr> ranks_;
  std::vector<std::vector<std::byte>> infos_;
  std::set<ConnPtr> conns_;  // every open connection
  std::vector<std::optional<std::vector<std::byte>>> round_;
  int gathered_ = 0;
  wire::Type roundType_ = wire::Type::kGather;  // kGather or kBroadcast, from its first frame
};

}  // namespace trnccl::bootstrap
