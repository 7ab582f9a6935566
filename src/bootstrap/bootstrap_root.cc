#include "bootstrap/bootstrap_root.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <deque>
#include <optional>
#include <set>
#include <vector>

#include "bootstrap/bootstrap_wire.h"
#include "common/env.h"
#include "common/log.h"

namespace trnccl::bootstrap {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using ErrorCode = boost::system::error_code;

// Connections that have not finished their hello; more are closed at once (fd exhaustion).
constexpr int kMaxPendingHandshakes = 1024;
constexpr std::chrono::milliseconds kDefaultHandshake{5000};
constexpr std::chrono::milliseconds kDefaultInitTimeout{120000};
// How long a finishing root keeps trying to deliver its last error frames.
constexpr std::chrono::milliseconds kLinger{2000};

struct Outgoing {
  wire::HeaderBytes header;
  std::shared_ptr<const std::vector<std::byte>> body;
};

struct Conn {
  explicit Conn(tcp::socket s) : socket(std::move(s)), timer(socket.get_executor()) {}
  tcp::socket socket;
  asio::steady_timer timer;  // handshake deadline
  std::string peer;          // "address:port", for log lines
  wire::HeaderBytes inHeader{};
  std::vector<std::byte> inBody;
  std::deque<Outgoing> outQueue;
  int rank = -1;  // set once checked in
  bool open = true;
  bool saidGoodbye = false;
  bool closeAfterWrite = false;
};
using ConnPtr = std::shared_ptr<Conn>;

std::shared_ptr<const std::vector<std::byte>> textBody(const std::string& text) {
  size_t n = std::min<size_t>(text.size(), wire::kMaxErrorBytes);
  auto body = std::make_shared<std::vector<std::byte>>(n);
  std::memcpy(body->data(), text.data(), n);
  return body;
}

}  // namespace

class RootService::Impl {
 public:
  Impl(uint64_t magic)
      : acceptor_(io_), initTimer_(io_), lingerTimer_(io_), retryTimer_(io_), magic_(magic) {
    handshake_ = std::chrono::milliseconds(
        env::getInt("TRNCCL_BOOTSTRAP_HANDSHAKE_MS", kDefaultHandshake.count()));
    initTimeout_ =
        std::chrono::milliseconds(env::getInt("TRNCCL_TIMEOUT_MS", kDefaultInitTimeout.count()));
  }

  Status bind(const std::string& host, uint16_t port);
  uint16_t port() const { return port_; }
  void run();
  void stop() { io_.stop(); }

 private:
  enum class Phase { kInit, kServing, kDone };

  void accept();
  void onAccept(tcp::socket socket);
  void readHello(const ConnPtr& c);
  void onHello(const ConnPtr& c, const wire::Header& h);
  void readFrame(const ConnPtr& c);
  void onFrame(const ConnPtr& c, const wire::Header& h);
  void onGather(const ConnPtr& c);
  void completeRound();
  void onGoodbye(const ConnPtr& c);
  void onLost(const ConnPtr& c, const std::string& why);
  void sendTables();
  void onInitTimeout();
  void reject(const ConnPtr& c, Code code, const std::string& message);
  void failAll(Code code, int peer, const std::string& message);
  void send(const ConnPtr& c, wire::Header h, std::shared_ptr<const std::vector<std::byte>> body);
  void writeNext(const ConnPtr& c);
  void drain(const ConnPtr& c);
  void closeConn(const ConnPtr& c);
  void finish();

  // Declared first so it is destroyed last: handlers it still holds own connections.
  asio::io_context io_;
  tcp::acceptor acceptor_;
  asio::steady_timer initTimer_;
  asio::steady_timer lingerTimer_;
  asio::steady_timer retryTimer_;
  uint64_t magic_;
  uint16_t port_ = 0;
  std::string address_;
  std::chrono::milliseconds handshake_{};
  std::chrono::milliseconds initTimeout_{};

  Phase phase_ = Phase::kInit;
  int nranks_ = 0;  // from the first accepted hello; 0 while nobody is checked in
  int checkedIn_ = 0;
  int finished_ = 0;  // ranks that said goodbye or disconnected after init
  int pending_ = 0;   // connections still in their handshake
  std::vector<ConnPtr> ranks_;
  std::vector<std::vector<std::byte>> infos_;
  std::set<ConnPtr> conns_;  // every open connection
  std::vector<std::optional<std::vector<std::byte>>> round_;
  int gathered_ = 0;
};

Status RootService::Impl::bind(const std::string& host, uint16_t port) {
  ErrorCode ec;
  auto address = asio::ip::make_address(host, ec);
  if (ec) return invalidArgument("bootstrap: root address '{}' is not numeric", host);
  tcp::endpoint at(address, port);
  acceptor_.open(at.protocol(), ec);
  if (!ec) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor_.bind(at, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return systemError("bootstrap: cannot listen on {}:{}: {}", host, port, ec.message());
  port_ = acceptor_.local_endpoint().port();
  address_ = fmt::format("{}:{}", host, port_);
  TRN_INFO(kBoot, "bootstrap: root listening on {}", address_);
  return Status::ok();
}

void RootService::Impl::run() {
  accept();
  initTimer_.expires_after(initTimeout_);
  initTimer_.async_wait([this](const ErrorCode& ec) {
    if (!ec) onInitTimeout();
  });
  io_.run();
  ErrorCode ignored;
  acceptor_.close(ignored);
  for (const ConnPtr& c : conns_) c->socket.close(ignored);
  conns_.clear();
  ranks_.clear();
  TRN_INFO(kBoot, "bootstrap: root {} finished", address_);
}

void RootService::Impl::accept() {
  acceptor_.async_accept([this](const ErrorCode& ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (ec) {
      // E.g. out of descriptors: back off instead of spinning on the error.
      TRN_WARN(kBoot, "bootstrap: root {} accept failed: {}", address_, ec.message());
      retryTimer_.expires_after(std::chrono::milliseconds(50));
      retryTimer_.async_wait([this](const ErrorCode& e) {
        if (!e && acceptor_.is_open()) accept();
      });
      return;
    }
    onAccept(std::move(socket));
    accept();
  });
}

void RootService::Impl::onAccept(tcp::socket socket) {
  auto c = std::make_shared<Conn>(std::move(socket));
  ErrorCode ec;
  auto remote = c->socket.remote_endpoint(ec);
  c->peer =
      ec ? std::string("?") : fmt::format("{}:{}", remote.address().to_string(), remote.port());
  if (pending_ >= kMaxPendingHandshakes) {
    TRN_WARN(kBoot, "bootstrap: root {} rejected connection from {}: {} handshakes pending",
             address_, c->peer, pending_);
    c->socket.close(ec);
    return;
  }
  c->socket.set_option(tcp::no_delay(true), ec);
  conns_.insert(c);
  ++pending_;
  c->timer.expires_after(handshake_);
  c->timer.async_wait([this, c](const ErrorCode& e) {
    if (e || !c->open || c->rank >= 0) return;
    TRN_WARN(kBoot, "bootstrap: root {} closed connection from {}: no hello within {} ms", address_,
             c->peer, handshake_.count());
    closeConn(c);
  });
  readHello(c);
}

void RootService::Impl::readHello(const ConnPtr& c) {
  asio::async_read(c->socket, asio::buffer(c->inHeader), [this, c](const ErrorCode& ec, size_t) {
    if (ec || !c->open) {
      if (c->open)
        TRN_WARN(kBoot, "bootstrap: root {}: {} left during handshake ({})", address_, c->peer,
                 ec.message());
      closeConn(c);
      return;
    }
    wire::Header h = wire::decode(c->inHeader);
    if (h.protoMagic != wire::kProtoMagic || h.version != wire::kProtoVersion ||
        h.type != wire::Type::kHello) {
      // Not a trnccl bootstrap peer (or another protocol version): no reply, just close.
      TRN_WARN(kBoot,
               "bootstrap: root {} rejected connection from {}: bad hello (magic 0x{:08x} "
               "version {} type {})",
               address_, c->peer, h.protoMagic, h.version, static_cast<int>(h.type));
      closeConn(c);
      return;
    }
    if (h.length > wire::kMaxInfoBytes) {
      reject(c, Code::kInvalidArgument,
             fmt::format("bootstrap: rank {} info of {} bytes exceeds the {} byte limit", h.rank,
                         h.length, wire::kMaxInfoBytes));
      return;
    }
    c->inBody.resize(h.length);
    asio::async_read(c->socket, asio::buffer(c->inBody), [this, c, h](const ErrorCode& e, size_t) {
      if (e || !c->open) {
        closeConn(c);
        return;
      }
      onHello(c, h);
    });
  });
}

void RootService::Impl::onHello(const ConnPtr& c, const wire::Header& h) {
  int rank = h.rank;
  int nranks = h.arg;
  if (h.idMagic != magic_) {
    return reject(c, Code::kInvalidArgument,
                  "bootstrap: unique id mismatch (this root serves another communicator)");
  }
  if (nranks <= 0 || nranks > wire::kMaxRanks) {
    return reject(
        c, Code::kInvalidArgument,
        fmt::format("bootstrap: nranks {} out of range [1, {}]", nranks, wire::kMaxRanks));
  }
  if (nranks_ != 0 && nranks != nranks_) {
    return reject(c, Code::kInvalidArgument,
                  fmt::format("bootstrap: rank {} says nranks {}, ranks already checked in say {}",
                              rank, nranks, nranks_));
  }
  if (rank < 0 || rank >= nranks) {
    return reject(c, Code::kInvalidArgument,
                  fmt::format("bootstrap: rank {} out of range [0, {})", rank, nranks));
  }
  if (nranks_ != 0 && ranks_[rank] != nullptr) {
    return reject(c, Code::kInvalidUsage,
                  fmt::format("bootstrap: rank {} already checked in (duplicate rank)", rank));
  }
  if (phase_ != Phase::kInit) {
    return reject(c, Code::kInvalidUsage,
                  fmt::format("bootstrap: rank {} checked in after init completed", rank));
  }
  if (nranks_ == 0) {
    nranks_ = nranks;
    ranks_.assign(nranks, nullptr);
    infos_.assign(nranks, {});
  }
  c->rank = rank;
  c->timer.cancel();
  --pending_;
  ranks_[rank] = c;
  infos_[rank] = std::move(c->inBody);
  ++checkedIn_;
  TRN_TRACE(kBoot, "bootstrap: root {}: rank {} of {} checked in from {}", address_, rank, nranks,
            c->peer);
  readFrame(c);  // watches for an early disconnect
  if (checkedIn_ == nranks_) sendTables();
}

void RootService::Impl::sendTables() {
  auto table = std::make_shared<std::vector<std::byte>>(8 * static_cast<size_t>(nranks_));
  for (int r = 0; r < nranks_; ++r) {
    wire::putU64(table->data() + 8 * r, infos_[r].size());
    table->insert(table->end(), infos_[r].begin(), infos_[r].end());
  }
  infos_.clear();
  phase_ = Phase::kServing;
  initTimer_.cancel();
  round_.assign(nranks_, std::nullopt);
  for (const ConnPtr& c : ranks_) send(c, {.type = wire::Type::kTable, .rank = c->rank}, table);
  TRN_INFO(kBoot, "bootstrap: root {}: all {} ranks checked in", address_, nranks_);
}

void RootService::Impl::readFrame(const ConnPtr& c) {
  asio::async_read(c->socket, asio::buffer(c->inHeader), [this, c](const ErrorCode& ec, size_t) {
    if (ec) return onLost(c, ec.message());
    wire::Header h = wire::decode(c->inHeader);
    if (h.protoMagic != wire::kProtoMagic || h.version != wire::kProtoVersion ||
        (h.type != wire::Type::kGather && h.type != wire::Type::kGoodbye) ||
        h.length > wire::kMaxGatherBytes || (h.type == wire::Type::kGoodbye && h.length != 0)) {
      return onLost(c, "sent an invalid frame");
    }
    c->inBody.resize(h.length);
    asio::async_read(c->socket, asio::buffer(c->inBody), [this, c, h](const ErrorCode& e, size_t) {
      if (e) return onLost(c, e.message());
      onFrame(c, h);
    });
  });
}

void RootService::Impl::onFrame(const ConnPtr& c, const wire::Header& h) {
  if (!c->open) return;
  if (phase_ == Phase::kDone) return readFrame(c);  // failed: wait for the rank to close
  if (h.type == wire::Type::kGoodbye) return onGoodbye(c);
  if (phase_ != Phase::kServing) return onLost(c, "sent allGather before init completed");
  onGather(c);
}

void RootService::Impl::onGather(const ConnPtr& c) {
  if (round_[c->rank].has_value()) return onLost(c, "sent two allGather blocks in one round");
  for (const ConnPtr& other : ranks_) {
    if (other->saidGoodbye) {
      return failAll(
          Code::kInvalidUsage, other->rank,
          fmt::format("bootstrap: allGather started after rank {} finalized", other->rank));
    }
  }
  round_[c->rank] = std::move(c->inBody);
  readFrame(c);
  if (++gathered_ == nranks_) completeRound();
}

void RootService::Impl::completeRound() {
  size_t size = round_[0]->size();
  for (int r = 1; r < nranks_; ++r) {
    if (round_[r]->size() != size) {
      return failAll(Code::kInvalidUsage, r,
                     fmt::format("bootstrap: allGather sizes differ: rank 0 sent {} bytes, "
                                 "rank {} sent {}",
                                 size, r, round_[r]->size()));
    }
  }
  auto result = std::make_shared<std::vector<std::byte>>();
  result->reserve(size * nranks_);
  for (auto& block : round_) {
    result->insert(result->end(), block->begin(), block->end());
    block.reset();
  }
  gathered_ = 0;
  for (const ConnPtr& c : ranks_) send(c, {.type = wire::Type::kResult, .rank = c->rank}, result);
}

void RootService::Impl::onGoodbye(const ConnPtr& c) {
  if (phase_ == Phase::kInit) return onLost(c, "said goodbye before init completed");
  c->saidGoodbye = true;
  closeConn(c);
  if (gathered_ > 0 && phase_ == Phase::kServing) {
    return failAll(Code::kInvalidUsage, c->rank,
                   fmt::format("bootstrap: rank {} finalized during an allGather", c->rank));
  }
  if (++finished_ == nranks_) finish();
}

void RootService::Impl::onLost(const ConnPtr& c, const std::string& why) {
  if (!c->open) return;
  closeConn(c);
  // Rejected newcomers (rank -1) and ranks that said goodbye leave without consequence.
  if (c->rank < 0 || c->saidGoodbye || phase_ == Phase::kDone) return;
  if (phase_ == Phase::kInit) {
    // The rank gave up (its own deadline) or died before the table: free its slot so it may
    // retry, and let the others time out on their own deadlines.
    TRN_WARN(kBoot, "bootstrap: root {}: rank {} left before init completed ({})", address_,
             c->rank, why);
    ranks_[c->rank] = nullptr;
    if (--checkedIn_ == 0) nranks_ = 0;
    return;
  }
  ++finished_;
  failAll(Code::kRemoteError, c->rank,
          fmt::format("bootstrap: rank {} disconnected ({})", c->rank, why));
}

void RootService::Impl::onInitTimeout() {
  if (phase_ != Phase::kInit) return;
  std::string missing;
  int shown = 0;
  for (int r = 0; r < nranks_ && shown < 8; ++r) {
    if (ranks_[r] == nullptr) missing += fmt::format("{}{}", shown++ ? ", " : "", r);
  }
  failAll(Code::kTimeout, -1,
          nranks_ == 0 ? fmt::format("bootstrap: root timed out after {} ms: no rank checked in",
                                     initTimeout_.count())
                       : fmt::format("bootstrap: root timed out after {} ms: {} of {} ranks "
                                     "checked in (missing {}{})",
                                     initTimeout_.count(), checkedIn_, nranks_, missing,
                                     nranks_ - checkedIn_ > shown ? ", ..." : ""));
}

void RootService::Impl::reject(const ConnPtr& c, Code code, const std::string& message) {
  TRN_WARN(kBoot, "bootstrap: root {} rejected connection from {}: {}", address_, c->peer, message);
  c->closeAfterWrite = true;
  c->timer.cancel();  // the linger/handshake bound now comes from the write itself
  c->timer.expires_after(handshake_);
  c->timer.async_wait([this, c](const ErrorCode& e) {
    if (!e) closeConn(c);
  });
  send(c, {.type = wire::Type::kError, .rank = c->rank, .arg = static_cast<int32_t>(code)},
       textBody(message));
}

void RootService::Impl::failAll(Code code, int peer, const std::string& message) {
  TRN_WARN(kBoot, "bootstrap: root {} failing the communicator: {}", address_, message);
  auto body = textBody(message);
  for (const ConnPtr& c : ranks_) {
    if (c == nullptr || !c->open || c->saidGoodbye) continue;
    c->closeAfterWrite = true;
    send(c, {.type = wire::Type::kError, .rank = peer, .arg = static_cast<int32_t>(code)}, body);
  }
  finish();
}

void RootService::Impl::send(const ConnPtr& c, wire::Header h,
                             std::shared_ptr<const std::vector<std::byte>> body) {
  if (!c->open) return;
  h.idMagic = magic_;
  h.length = body->size();
  c->outQueue.push_back({wire::encode(h), std::move(body)});
  if (c->outQueue.size() == 1) writeNext(c);
}

void RootService::Impl::writeNext(const ConnPtr& c) {
  const Outgoing& out = c->outQueue.front();
  std::array<asio::const_buffer, 2> bufs{asio::buffer(out.header), asio::buffer(*out.body)};
  asio::async_write(c->socket, bufs, [this, c](const ErrorCode& ec, size_t) {
    if (ec) return onLost(c, ec.message());
    c->outQueue.pop_front();
    if (!c->outQueue.empty()) return writeNext(c);
    if (c->closeAfterWrite) {
      // Half-close and let the peer close first: closing with its bytes unread would send an
      // RST that can destroy the error frame before the peer reads it.
      ErrorCode ignored;
      c->socket.shutdown(tcp::socket::shutdown_send, ignored);
      if (c->rank < 0) drain(c);  // ranks already have a read pending
    }
  });
}

void RootService::Impl::drain(const ConnPtr& c) {
  c->inBody.resize(512);
  c->socket.async_read_some(asio::buffer(c->inBody), [this, c](const ErrorCode& ec, size_t) {
    if (ec) return closeConn(c);
    drain(c);
  });
}

void RootService::Impl::closeConn(const ConnPtr& c) {
  if (!c->open) return;
  c->open = false;
  if (c->rank < 0) --pending_;
  ErrorCode ignored;
  c->timer.cancel();
  c->socket.shutdown(tcp::socket::shutdown_both, ignored);
  c->socket.close(ignored);
  conns_.erase(c);
  if (phase_ == Phase::kDone && conns_.empty()) lingerTimer_.cancel();
}

void RootService::Impl::finish() {
  if (phase_ == Phase::kDone && !acceptor_.is_open()) return;
  phase_ = Phase::kDone;
  ErrorCode ignored;
  acceptor_.close(ignored);  // releases the port now
  initTimer_.cancel();
  retryTimer_.cancel();
  std::vector<ConnPtr> idle;
  for (const ConnPtr& c : conns_) {
    if (c->outQueue.empty()) idle.push_back(c);
  }
  for (const ConnPtr& c : idle) closeConn(c);
  if (conns_.empty()) return;  // nothing left: run() returns
  lingerTimer_.expires_after(kLinger);
  lingerTimer_.async_wait([this](const ErrorCode& ec) {
    if (ec) return;
    std::vector<ConnPtr> left(conns_.begin(), conns_.end());
    for (const ConnPtr& c : left) closeConn(c);
  });
}

RootService::RootService(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RootService::~RootService() = default;

Result<std::unique_ptr<RootService>> RootService::create(const std::string& host, uint16_t port,
                                                         uint64_t magic) {
  auto impl = std::make_unique<Impl>(magic);
  TRN_TRY(impl->bind(host, port));
  return std::unique_ptr<RootService>(new RootService(std::move(impl)));
}

uint16_t RootService::port() const { return impl_->port(); }
void RootService::run() { impl_->run(); }
void RootService::stop() { impl_->stop(); }

}  // namespace trnccl::bootstrap
