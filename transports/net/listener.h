// The hardened accept of every trnccl listener (the bootstrap root, the tcp transport's
// setup), run on the caller's Boost.Asio io_context.
//
// A listening port is reachable by anything on the network: port scanners, a mistyped HTTP
// client, a peer of another job, a slow-loris dribbling one byte at a time. So no connection
// is trusted until its handshake (whatever the protocol reads and checks first) is over:
//  - every accepted connection gets a deadline, ListenerOptions::handshake after accept and
//    never later than notAfter; when it passes, the connection is closed (its pending
//    operations complete with an error). Bytes trickling in do not extend it.
//  - at most maxPending handshakes run at once; later connections wait in the kernel's
//    backlog until one ends, so a flood of silent connections costs a bounded number of
//    descriptors and delays real peers by at most a deadline per maxPending of them;
//  - every connection is read on its own, so none keeps another from being served;
//  - accept errors (out of descriptors, ...) are retried after kAcceptRetry;
//  - rejections are logged, the first kWarnRejections as warnings and the rest as INFO, so
//    junk cannot flood the log.
// Single-threaded: everything runs on the io_context's thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/log.h"
#include "common/status.h"
#include "common/wait.h"

namespace trnccl::transport::net {

struct ListenerOptions {
  std::string name;  // who listens, for log lines: "bootstrap: root", "tcp: rank 3"
  unsigned subsys = log::kNet;
  std::chrono::milliseconds handshake{5000};
  Clock::time_point notAfter = Clock::time_point::max();
  int maxPending = 32;
};

class Listener;

// One accepted connection, made by the Listener. Its deadline runs until admit().
class Incoming {
 public:
  Incoming(boost::asio::ip::tcp::socket socket, Listener& listener);

  boost::asio::ip::tcp::socket& socket() { return socket_; }
  const std::string& peer() const { return peer_; }  // "address:port", for log lines
  bool isOpen() const { return open_; }
  bool inHandshake() const { return inHandshake_; }
  // The peer passed the handshake: its deadline stops and its slot is free for the next.
  void admit();
  // Shuts the connection down and closes it (idempotent); during the handshake, frees its slot.
  void close();

 private:
  friend class Listener;
  boost::asio::ip::tcp::socket socket_;
  boost::asio::steady_timer deadline_;
  Listener& listener_;
  std::string peer_;
  bool open_ = true;
  bool inHandshake_ = true;
};

class Listener {
 public:
  static constexpr std::chrono::milliseconds kAcceptRetry{50};
  static constexpr int kWarnRejections = 8;
  using OnAccept = std::function<void(const std::shared_ptr<Incoming>&)>;

  Listener(boost::asio::io_context& io, ListenerOptions options);
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  // Opens, binds (port 0: ephemeral; else with SO_REUSEADDR) and listens.
  Status listen(const boost::asio::ip::tcp::endpoint& at);
  boost::asio::ip::tcp::endpoint local() const;
  // "<name> at <address:port>", the prefix of this listener's log lines.
  const std::string& where() const { return where_; }
  // Accepts until close(), handing every connection to `onAccept` with its deadline running.
  void start(OnAccept onAccept);
  // Logs why `in` is rejected (unless it is closed already) and closes it.
  void reject(Incoming& in, std::string_view why);
  // Stops accepting and releases the port; accepted connections are the caller's to close.
  void close();
  bool isOpen() const { return acceptor_.is_open(); }
  int pending() const { return pending_; }

 private:
  friend class Incoming;
  void accept();
  void onAccepted(const boost::system::error_code& ec, boost::asio::ip::tcp::socket socket);
  void endHandshake();

  ListenerOptions options_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer retry_;
  OnAccept onAccept_;
  std::string where_;
  int pending_ = 0;  // connections in their handshake
  int rejected_ = 0;
  bool parked_ = false;  // maxPending reached: endHandshake() resumes accepting
};

}  // namespace trnccl::transport::net
