#include "transports/tcp/setup.h"

#include <unistd.h>

#include <algorithm>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <span>

#include "common/env.h"
#include "common/log.h"
#include "transports/core/setup.h"
#include "transports/tcp/address.h"
#include "transports/tcp/interfaces.h"
#include "transports/tcp/testing.h"
#include "transports/tcp/wire.h"

namespace trnccl::transport::tcp {

namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

// Measured on the 2-core CI machine over loopback, see tcp_transport.h.
constexpr uint32_t kDefaultSockets = 1;
constexpr auto kConnectTimeout = std::chrono::seconds(5);
constexpr auto kRetryInterval = std::chrono::milliseconds(100);
constexpr int kWarnRejections = 8;

// One connection being set up; lives as long as a handler holds it.
struct Attempt {
  Attempt(tcp::socket s, asio::io_context& io) : socket(std::move(s)), timer(io) {}
  tcp::socket socket;
  asio::steady_timer timer;
  Handshake hello;  // what the connector sends
  Handshake reply;  // what the acceptor answers
  std::string name;
  size_t slot = 0;
  uint32_t index = 0;
};

class Setup {
 public:
  Setup(SetupContext& ctx, const std::vector<int>& peers) : ctx_(ctx), peers_(peers) {}
  Result<std::vector<PeerSockets>> run(asio::io_context* target);

 private:
  struct Slot {
    int peer = -1;
    uint32_t nsocks = 0;
    std::vector<std::optional<tcp::socket>> sockets;
    std::vector<std::string> names;
    std::vector<bool> claimed;
  };

  Status validate() const;
  Status openListener();
  Status prepareSlots(const std::vector<ListenAddress>& addresses);
  Status connectAll(const std::vector<ListenAddress>& addresses);
  Result<std::vector<PeerSockets>> rehome(asio::io_context& target);

  void accept();
  void onAccepted(const error_code& ec, tcp::socket socket);
  void onHello(const std::shared_ptr<Attempt>& in, const error_code& ec);
  Status checkHello(const Handshake& hello) const;
  void endHandshake();
  void dial(size_t slot, uint32_t index, const tcp::endpoint& endpoint);
  void onConnected(const std::shared_ptr<Attempt>& out, const tcp::endpoint& endpoint,
                   const error_code& ec);
  void onReply(const std::shared_ptr<Attempt>& out, const error_code& ec);
  Handshake handshakeFor(const Slot& slot, uint32_t index) const;
  void place(size_t slot, uint32_t index, tcp::socket socket, const std::string& name);
  void fail(Status status);
  std::string missing() const;
  Clock::time_point handshakeDeadline(std::chrono::seconds limit) const;

  SetupContext& ctx_;
  const std::vector<int>& peers_;
  asio::io_context io_;  // first: outlives every socket and timer of the setup
  tcp::acceptor acceptor_{io_};
  asio::steady_timer deadline_{io_};
  asio::steady_timer acceptRetry_{io_};
  uint32_t nsocks_ = 0;
  std::vector<Slot> slots_;  // indexed like peers_
  std::vector<int> slotOf_;  // by rank; -1: not a tcp peer
  size_t missing_ = 0;       // sockets not established yet
  int pending_ = 0;          // incoming handshakes being read
  int rejected_ = 0;
  bool acceptParked_ = false;
  bool finished_ = false;
  Status failure_;
};

Status Setup::validate() const {
  if (ctx_.oob == nullptr || ctx_.bell == nullptr ||
      ctx_.peers.size() != static_cast<size_t>(ctx_.nranks)) {
    return invalidArgument(
        "tcp: setup context without oob or doorbell, or with {} peers for {} "
        "ranks",
        ctx_.peers.size(), ctx_.nranks);
  }
  std::set<int> seen;
  for (int peer : peers_) {
    if (peer < 0 || peer >= ctx_.nranks || peer == ctx_.rank || !seen.insert(peer).second) {
      return invalidArgument("tcp: rank {} cannot connect to rank {} (of {}, duplicate or self?)",
                             ctx_.rank, peer, ctx_.nranks);
    }
  }
  return Status::ok();
}

Status Setup::openListener() {
  if (std::none_of(peers_.begin(), peers_.end(), [&](int p) { return p < ctx_.rank; })) {
    return Status::ok();  // nobody connects to this rank
  }
  Result<Interface> chosen = chooseListenInterface();
  if (!chosen) return chosen.status();
  tcp::endpoint endpoint(chosen->address, 0);
  error_code ec;
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return systemError("tcp: rank {} cannot listen on {} ({}): {}", ctx_.rank,
                       chosen->address.to_string(), chosen->name, ec.message());
  }
  TRN_INFO(kNet, "tcp: rank {} listening on {} ({})", ctx_.rank,
           nameOf(acceptor_.local_endpoint(ec)), chosen->name);
  return Status::ok();
}

Status Setup::prepareSlots(const std::vector<ListenAddress>& addresses) {
  slotOf_.assign(static_cast<size_t>(ctx_.nranks), -1);
  for (int peer : peers_) {
    const ListenAddress& theirs = addresses[static_cast<size_t>(peer)];
    if (peer > ctx_.rank && theirs.family == 0) {
      return Status(Code::kInternalError,
                    fmt::format("tcp: rank {} does not listen for rank {}; were transports "
                                "chosen asymmetrically?",
                                peer, ctx_.rank),
                    peer);
    }
    Slot slot;
    slot.peer = peer;
    slot.nsocks = std::clamp<uint32_t>(std::min(nsocks_, theirs.nsocks), 1, kMaxSockets);
    slot.sockets.resize(slot.nsocks);
    slot.names.resize(slot.nsocks);
    slot.claimed.assign(slot.nsocks, false);
    missing_ += slot.nsocks;
    slotOf_[static_cast<size_t>(peer)] = static_cast<int>(slots_.size());
    slots_.push_back(std::move(slot));
  }
  return Status::ok();
}

Clock::time_point Setup::handshakeDeadline(std::chrono::seconds limit) const {
  return std::min(ctx_.deadline.at(), Clock::now() + limit);
}

void Setup::fail(Status status) {
  if (finished_) return;
  failure_ = std::move(status);
  finished_ = true;
  io_.stop();
}

void Setup::place(size_t slot, uint32_t index, tcp::socket socket, const std::string& name) {
  Slot& s = slots_[slot];
  s.sockets[index].emplace(std::move(socket));
  s.names[index] = name;
  if (--missing_ == 0) {
    finished_ = true;
    io_.stop();  // pending junk connections are dropped with the io_context
  }
}

std::string Setup::missing() const {
  std::string out;
  for (const Slot& slot : slots_) {
    size_t have = std::count_if(slot.sockets.begin(), slot.sockets.end(),
                                [](const auto& s) { return s.has_value(); });
    if (have == slot.nsocks) continue;
    out += fmt::format("{}{} rank {} ({} of {})", out.empty() ? "" : ", ",
                       slot.peer < ctx_.rank ? "from" : "to", slot.peer, have, slot.nsocks);
  }
  return out;
}

Handshake Setup::handshakeFor(const Slot& slot, uint32_t index) const {
  Handshake h;
  h.rank = ctx_.rank;
  h.commHash = ctx_.commHash;
  h.socketIndex = index;
  h.nsocks = slot.nsocks;
  return h;
}

// ---- accepting ----

void Setup::accept() {
  if (finished_) return;
  if (pending_ >= kMaxPendingHandshakes) {
    acceptParked_ = true;  // endHandshake() resumes
    return;
  }
  acceptor_.async_accept(
      [this](const error_code& ec, tcp::socket socket) { onAccepted(ec, std::move(socket)); });
}

void Setup::onAccepted(const error_code& ec, tcp::socket socket) {
  if (finished_) return;
  if (ec) {
    // EMFILE and friends pass; a listener error must not end the setup on its own.
    TRN_WARN(kNet, "tcp: rank {} accept failed: {}; retrying", ctx_.rank, ec.message());
    acceptRetry_.expires_after(kRetryInterval);
    acceptRetry_.async_wait([this](const error_code& e) {
      if (!e) accept();
    });
    return;
  }
  auto in = std::make_shared<Attempt>(std::move(socket), io_);
  in->name = remoteName(in->socket);
  ++pending_;
  in->timer.expires_at(handshakeDeadline(kHandshakeTimeout));
  in->timer.async_wait([in](const error_code& e) {
    error_code ignored;
    if (!e) in->socket.close(ignored);  // the read completes with operation_aborted
  });
  asio::async_read(in->socket, asio::buffer(&in->hello, sizeof(in->hello)),
                   [this, in](const error_code& e, size_t) { onHello(in, e); });
  accept();
}

Status Setup::checkHello(const Handshake& hello) const {
  if (hello.magic != kHandshakeMagic) {
    return invalidArgument("bad magic {:#x}, expected {:#x}", hello.magic, kHandshakeMagic);
  }
  if (hello.version != kProtocolVersion) {
    return invalidArgument("protocol version {}, this rank speaks {}", hello.version,
                           kProtocolVersion);
  }
  if (hello.commHash != ctx_.commHash) {
    return invalidArgument("communicator {:#x}, expected {:#x}", hello.commHash, ctx_.commHash);
  }
  if (hello.rank < 0 || hello.rank >= ctx_.rank || slotOf_[static_cast<size_t>(hello.rank)] < 0) {
    return invalidArgument("rank {} is not a tcp peer that connects to rank {}", hello.rank,
                           ctx_.rank);
  }
  const Slot& slot = slots_[static_cast<size_t>(slotOf_[static_cast<size_t>(hello.rank)])];
  if (hello.nsocks != slot.nsocks || hello.socketIndex >= slot.nsocks) {
    return invalidArgument("socket {} of {}, expected {} sockets", hello.socketIndex, hello.nsocks,
                           slot.nsocks);
  }
  if (slot.claimed[hello.socketIndex]) {
    return invalidArgument("duplicate socket {} from rank {}", hello.socketIndex, hello.rank);
  }
  return Status::ok();
}

void Setup::endHandshake() {
  --pending_;
  if (acceptParked_) {
    acceptParked_ = false;
    accept();
  }
}

void Setup::onHello(const std::shared_ptr<Attempt>& in, const error_code& ec) {
  if (finished_) return;
  Status verdict =
      ec ? invalidArgument("no complete handshake ({})", ec.message()) : checkHello(in->hello);
  if (!verdict) {
    testing::counters().add(testing::Event::kRejectedHandshakes);
    // A port scanner must not flood the log: the first few are warnings, the rest info.
    if (++rejected_ <= kWarnRejections) {
      TRN_WARN(kNet, "tcp: rank {} rejected a connection from {}: {}", ctx_.rank, in->name,
               verdict.message());
    } else {
      TRN_INFO(kNet, "tcp: rank {} rejected a connection from {}: {}", ctx_.rank, in->name,
               verdict.message());
    }
    error_code ignored;
    in->timer.cancel();
    in->socket.close(ignored);
    endHandshake();
    return;
  }
  in->slot = static_cast<size_t>(slotOf_[static_cast<size_t>(in->hello.rank)]);
  in->index = in->hello.socketIndex;
  slots_[in->slot].claimed[in->index] = true;
  in->reply = handshakeFor(slots_[in->slot], in->index);
  asio::async_write(in->socket, asio::buffer(&in->reply, sizeof(in->reply)),
                    [this, in](const error_code& e, size_t) {
                      if (finished_) return;
                      in->timer.cancel();
                      endHandshake();
                      if (e) {
                        // The connector fails on its side and reports; let it retry here.
                        slots_[in->slot].claimed[in->index] = false;
                        TRN_WARN(kNet, "tcp: rank {} could not answer {}: {}", ctx_.rank, in->name,
                                 e.message());
                        return;
                      }
                      error_code ignored;
                      in->socket.set_option(tcp::no_delay(true), ignored);
                      place(in->slot, in->index, std::move(in->socket), in->name);
                    });
}

// ---- connecting ----

void Setup::dial(size_t slot, uint32_t index, const tcp::endpoint& endpoint) {
  if (finished_) return;
  auto out = std::make_shared<Attempt>(tcp::socket(io_), io_);
  out->slot = slot;
  out->index = index;
  out->name = nameOf(endpoint);
  out->timer.expires_at(handshakeDeadline(kConnectTimeout));
  out->timer.async_wait([out](const error_code& e) {
    error_code ignored;
    if (!e) out->socket.close(ignored);  // the connect completes with operation_aborted
  });
  out->socket.async_connect(
      endpoint, [this, out, endpoint](const error_code& e) { onConnected(out, endpoint, e); });
}

void Setup::onConnected(const std::shared_ptr<Attempt>& out, const tcp::endpoint& endpoint,
                        const error_code& ec) {
  if (finished_) return;
  out->timer.cancel();
  if (ec) {
    if (ctx_.deadline.expired()) {
      return fail(Status(Code::kRemoteError,
                         fmt::format("tcp: rank {} cannot connect to rank {} at {}: {}", ctx_.rank,
                                     slots_[out->slot].peer, out->name, ec.message()),
                         slots_[out->slot].peer));
    }
    TRN_INFO(kNet, "tcp: rank {} connecting to {}: {}; retrying", ctx_.rank, out->name,
             ec.message());
    auto retry = std::make_shared<asio::steady_timer>(io_, kRetryInterval);
    retry->async_wait([this, retry, out, endpoint](const error_code& e) {
      if (!e) dial(out->slot, out->index, endpoint);
    });
    return;
  }
  error_code ignored;
  out->socket.set_option(tcp::no_delay(true), ignored);
  out->hello = handshakeFor(slots_[out->slot], out->index);
  // No timer from here: the acceptor answers once it has read us, which the global deadline
  // bounds (a flood of junk at the listener may delay it by kHandshakeTimeout).
  asio::async_write(out->socket, asio::buffer(&out->hello, sizeof(out->hello)),
                    [this, out](const error_code& e, size_t) {
                      if (finished_) return;
                      if (e) return onReply(out, e);
                      asio::async_read(
                          out->socket, asio::buffer(&out->reply, sizeof(out->reply)),
                          [this, out](const error_code& e2, size_t) { onReply(out, e2); });
                    });
}

void Setup::onReply(const std::shared_ptr<Attempt>& out, const error_code& ec) {
  if (finished_) return;
  const Slot& slot = slots_[out->slot];
  const Handshake& r = out->reply;
  std::string problem;
  if (ec) {
    problem = fmt::format("no handshake answer ({})", ec.message());
  } else if (r.magic != kHandshakeMagic || r.version != kProtocolVersion ||
             r.commHash != ctx_.commHash || r.rank != slot.peer || r.socketIndex != out->index ||
             r.nsocks != slot.nsocks) {
    problem = fmt::format(
        "bad handshake answer (magic {:#x}, version {}, communicator {:#x}, "
        "rank {}, socket {} of {})",
        r.magic, r.version, r.commHash, r.rank, r.socketIndex, r.nsocks);
  }
  if (!problem.empty()) {
    return fail(Status(Code::kRemoteError,
                       fmt::format("tcp: rank {} connecting socket {} to rank {} at {}: {}",
                                   ctx_.rank, out->index, slot.peer, out->name, problem),
                       slot.peer));
  }
  place(out->slot, out->index, std::move(out->socket), out->name);
}

// ---- the whole setup ----

Status Setup::connectAll(const std::vector<ListenAddress>& addresses) {
  TRN_TRY(prepareSlots(addresses));
  if (missing_ == 0) return Status::ok();
  if (acceptor_.is_open()) accept();
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].peer < ctx_.rank) continue;
    tcp::endpoint endpoint = endpointOf(addresses[static_cast<size_t>(slots_[i].peer)]);
    for (uint32_t index = 0; index < slots_[i].nsocks; ++index) dial(i, index, endpoint);
  }
  if (ctx_.deadline.at() != Clock::time_point::max()) {
    deadline_.expires_at(ctx_.deadline.at());
    deadline_.async_wait([this](const error_code& ec) {
      if (ec) return;
      fail(Status(Code::kTimeout,
                  fmt::format("tcp: rank {} timed out connecting; missing sockets {}", ctx_.rank,
                              missing())));
    });
  }
  io_.run();
  if (!failure_) return failure_;
  if (missing_ != 0) return internalError("tcp: setup ended with sockets {} missing", missing());
  return Status::ok();
}

// Moves the established sockets from the setup's io_context onto the transport's.
Result<std::vector<PeerSockets>> Setup::rehome(asio::io_context& target) {
  std::vector<PeerSockets> out;
  for (Slot& slot : slots_) {
    PeerSockets peer;
    peer.peer = slot.peer;
    peer.names = slot.names;
    for (auto& socket : slot.sockets) {
      error_code ec;
      tcp::endpoint local = socket->local_endpoint(ec);
      int fd = ec ? -1 : socket->release(ec);
      tcp::socket moved(target);
      if (!ec) moved.assign(local.protocol(), fd, ec);
      if (ec) {
        if (fd >= 0 && !moved.is_open()) ::close(fd);
        return systemError("tcp: rank {} cannot hand a socket to rank {} to its I/O thread: {}",
                           ctx_.rank, slot.peer, ec.message());
      }
      peer.sockets.push_back(std::move(moved));
    }
    TRN_INFO(kNet, "tcp: rank {} <-> rank {}: {} socket(s), {}", ctx_.rank, slot.peer, slot.nsocks,
             slot.names[0]);
    out.push_back(std::move(peer));
  }
  return out;
}

Result<std::vector<PeerSockets>> Setup::run(asio::io_context* target) {
  if (ctx_.oob == nullptr) return invalidArgument("tcp: setup context without an oob channel");
  Status local = validate();
  Result<uint32_t> nsocks = socketsPerPeer();
  if (local && !nsocks) local = nsocks.status();
  if (local) nsocks_ = *nsocks;
  if (local) local = openListener();
  ListenAddress mine;
  mine.ok = local.isOk();
  mine.nsocks = nsocks_;
  if (acceptor_.is_open()) {
    error_code ec;
    publish(acceptor_.local_endpoint(ec), mine);
  }
  Result<std::vector<ListenAddress>> addresses = exchange(ctx_, mine, "tcp");
  if (!addresses) return addresses.status();
  TRN_TRY(firstFailure(local, *addresses, "tcp", "open its tcp listener"));

  local = connectAll(*addresses);
  error_code ignored;
  acceptor_.close(ignored);
  TRN_TRY(agree(ctx_, local, "tcp", "connect its tcp peers"));
  if (slots_.empty()) return std::vector<PeerSockets>{};
  if (target == nullptr) return invalidArgument("tcp: no I/O context for {} peers", slots_.size());
  return rehome(*target);
}

}  // namespace

Result<uint32_t> socketsPerPeer() {
  int64_t n = env::getInt("TRNCCL_SOCKET_NSOCKS", kDefaultSockets);
  if (n < 1 || n > kMaxSockets) {
    return invalidArgument("tcp: TRNCCL_SOCKET_NSOCKS={} is outside [1, {}]", n, kMaxSockets);
  }
  return static_cast<uint32_t>(n);
}

Result<std::vector<PeerSockets>> establish(SetupContext& ctx, const std::vector<int>& peers,
                                           boost::asio::io_context* target) {
  return Setup(ctx, peers).run(target);
}

}  // namespace trnccl::transport::tcp
