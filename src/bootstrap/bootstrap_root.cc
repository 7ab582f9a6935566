// The bootstrap root (bootstrap_root.h, root_impl.h): listening, check-in, and writing,
// failing and closing connections. The relay after check-in is root_relay.cc.
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "bootstrap/root_impl.h"
#include "common/env.h"
#include "common/log.h"
#include "transports/net/address.h"

namespace trnccl::bootstrap {
namespace {

// Connections that have not finished their hello; more wait in the kernel's backlog.
constexpr int kMaxPendingHandshakes = 1024;
constexpr std::chrono::milliseconds kDefaultHandshake{5000};
constexpr std::chrono::milliseconds kDefaultInitTimeout{120000};
// How long a finishing root keeps trying to deliver its last error frames.
constexpr std::chrono::milliseconds kLinger{2000};
// The root gives up on missing ranks this much before the ranks' own init deadline (T, the
// same TRNCCL_TIMEOUT_MS), so that its error, which names them, reaches the waiting ranks
// before they time out knowing nothing: T minus min(T/10, 1 s).
constexpr std::chrono::milliseconds kMaxInitLead{1000};

std::chrono::milliseconds rootInitTimeout() {
  std::chrono::milliseconds t(env::getInt("TRNCCL_TIMEOUT_MS", kDefaultInitTimeout.count()));
  return t - std::min(t / 10, kMaxInitLead);
}

std::shared_ptr<const std::vector<std::byte>> textBody(const std::string& text) {
  size_t n = std::min<size_t>(text.size(), wire::kMaxErrorBytes);
  auto body = std::make_shared<std::vector<std::byte>>(n);
  std::memcpy(body->data(), text.data(), n);
  return body;
}

net::ListenerOptions listenerOptions() {
  return {.name = "bootstrap: root",
          .subsys = log::kBoot,
          .handshake = std::chrono::milliseconds(
              env::getInt("TRNCCL_BOOTSTRAP_HANDSHAKE_MS", kDefaultHandshake.count())),
          .maxPending = kMaxPendingHandshakes};
}

}  // namespace

RootService::Impl::Impl(uint64_t magic)
    : listener_(io_, listenerOptions()), initTimer_(io_), lingerTimer_(io_), magic_(magic) {
  initTimeout_ = rootInitTimeout();
}

Status RootService::Impl::bind(const std::string& host, uint16_t port) {
  ErrorCode ec;
  auto address = asio::ip::make_address(host, ec);
  if (ec) return invalidArgument("bootstrap: root address '{}' is not numeric", host);
  TRN_TRY(listener_.listen(tcp::endpoint(address, port)));
  port_ = listener_.local().port();
  address_ = net::nameOf(listener_.local());
  TRN_INFO(kBoot, "bootstrap: root listening on {}", address_);
  return Status::ok();
}

void RootService::Impl::run() {
  listener_.start([this](const std::shared_ptr<net::Incoming>& link) { onAccept(link); });
  initTimer_.expires_after(initTimeout_);
  initTimer_.async_wait([this](const ErrorCode& ec) {
    if (!ec) onInitTimeout();
  });
  io_.run();
  listener_.close();
  for (const ConnPtr& c : conns_) c->link->close();
  conns_.clear();
  ranks_.clear();
  TRN_INFO(kBoot, "bootstrap: root {} finished", address_);
}

void RootService::Impl::onAccept(const std::shared_ptr<net::Incoming>& link) {
  auto c = std::make_shared<Conn>(link);
  conns_.insert(c);
  readHello(c);
}

void RootService::Impl::readHello(const ConnPtr& c) {
  asio::async_read(c->socket(), asio::buffer(c->inHeader), [this, c](const ErrorCode& ec, size_t) {
    if (ec || !c->open()) {
      if (c->open()) listener_.reject(*c->link, fmt::format("left ({})", ec.message()));
      return closeConn(c);
    }
    wire::Header h = wire::decode(c->inHeader);
    net::HeaderCheck check = wire::check(h, wire::kMaxInfoBytes);
    if (check.verdict == net::HeaderVerdict::kForeign || h.type != wire::Type::kHello) {
      // Not a trnccl bootstrap peer (or another protocol version): no reply, just close.
      listener_.reject(*c->link, check.ok() ? fmt::format("frame of type {} instead of a hello",
                                                          static_cast<int>(h.type))
                                            : check.problem);
      return closeConn(c);
    }
    if (!check.ok()) {
      return reject(c, Code::kInvalidArgument,
                    fmt::format("bootstrap: rank {} info of {} bytes exceeds the {} byte limit",
                                h.rank, h.length, wire::kMaxInfoBytes));
    }
    c->inBody.resize(h.length);
    asio::async_read(c->socket(), asio::buffer(c->inBody),
                     [this, c, h](const ErrorCode& e, size_t) {
                       if (e || !c->open()) return closeConn(c);
                       onHello(c, h);
                     });
  });
}

Status RootService::Impl::checkHello(const wire::Header& h) const {
  int rank = h.rank;
  int nranks = h.arg;
  if (h.idMagic != magic_) {
    return invalidArgument("bootstrap: unique id mismatch (this root serves another communicator)");
  }
  if (nranks <= 0 || nranks > wire::kMaxRanks) {
    return invalidArgument("bootstrap: nranks {} out of range [1, {}]", nranks, wire::kMaxRanks);
  }
  if (nranks_ != 0 && nranks != nranks_) {
    return invalidArgument("bootstrap: rank {} says nranks {}, ranks already checked in say {}",
                           rank, nranks, nranks_);
  }
  if (rank < 0 || rank >= nranks) {
    return invalidArgument("bootstrap: rank {} out of range [0, {})", rank, nranks);
  }
  if (nranks_ != 0 && ranks_[rank] != nullptr) {
    return makeError(Code::kInvalidUsage, "bootstrap: rank {} already checked in (duplicate rank)",
                     rank);
  }
  if (phase_ != Phase::kInit) {
    return makeError(Code::kInvalidUsage, "bootstrap: rank {} checked in after init completed",
                     rank);
  }
  return Status::ok();
}

void RootService::Impl::onHello(const ConnPtr& c, const wire::Header& h) {
  Status verdict = checkHello(h);
  if (!verdict) return reject(c, verdict.code(), verdict.message());
  int rank = h.rank;
  if (nranks_ == 0) {
    nranks_ = h.arg;
    ranks_.assign(nranks_, nullptr);
    infos_.assign(nranks_, {});
  }
  c->rank = rank;
  c->link->admit();
  ranks_[rank] = c;
  infos_[rank] = std::move(c->inBody);
  ++checkedIn_;
  TRN_TRACE(kBoot, "bootstrap: root {}: rank {} of {} checked in from {}", address_, rank, nranks_,
            c->peer());
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

void RootService::Impl::onLost(const ConnPtr& c, const std::string& why) {
  if (!c->open()) return closeConn(c);  // closed already (by us, or the handshake deadline)
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
                                     "checked in (missing rank{} {}{})",
                                     initTimeout_.count(), checkedIn_, nranks_,
                                     nranks_ - checkedIn_ > 1 ? "s" : "", missing,
                                     nranks_ - checkedIn_ > shown ? ", ..." : ""));
}

// Answers a newcomer with an error frame, then closes; its handshake deadline still bounds
// the write and the wait for the peer to close first.
void RootService::Impl::reject(const ConnPtr& c, Code code, const std::string& message) {
  TRN_WARN(kBoot, "{} rejected a connection from {}: {}", listener_.where(), c->peer(), message);
  c->closeAfterWrite = true;
  send(c, {.type = wire::Type::kError, .rank = c->rank, .arg = static_cast<int32_t>(code)},
       textBody(message));
}

void RootService::Impl::failAll(Code code, int peer, const std::string& message) {
  TRN_WARN(kBoot, "bootstrap: root {} failing the communicator: {}", address_, message);
  auto body = textBody(message);
  for (const ConnPtr& c : ranks_) {
    if (c == nullptr || !c->open() || c->saidGoodbye) continue;
    c->closeAfterWrite = true;
    send(c, {.type = wire::Type::kError, .rank = peer, .arg = static_cast<int32_t>(code)}, body);
  }
  finish();
}

void RootService::Impl::send(const ConnPtr& c, wire::Header h,
                             std::shared_ptr<const std::vector<std::byte>> body) {
  if (!c->open()) return;
  h.idMagic = magic_;
  h.length = body->size();
  c->outQueue.push_back({wire::encode(h), std::move(body)});
  if (c->outQueue.size() == 1) writeNext(c);
}

void RootService::Impl::writeNext(const ConnPtr& c) {
  const Outgoing& out = c->outQueue.front();
  std::array<asio::const_buffer, 2> bufs{asio::buffer(out.header), asio::buffer(*out.body)};
  asio::async_write(c->socket(), bufs, [this, c](const ErrorCode& ec, size_t) {
    if (ec) return onLost(c, ec.message());
    c->outQueue.pop_front();
    if (!c->outQueue.empty()) return writeNext(c);
    if (c->closeAfterWrite) {
      // Half-close and let the peer close first: closing with its bytes unread would send an
      // RST that can destroy the error frame before the peer reads it.
      ErrorCode ignored;
      c->socket().shutdown(tcp::socket::shutdown_send, ignored);
      if (c->rank < 0) drain(c);  // ranks already have a read pending
    }
  });
}

void RootService::Impl::drain(const ConnPtr& c) {
  c->inBody.resize(512);
  c->socket().async_read_some(asio::buffer(c->inBody), [this, c](const ErrorCode& ec, size_t) {
    if (ec) return closeConn(c);
    drain(c);
  });
}

// Idempotent; also for connections whose handshake deadline closed them.
void RootService::Impl::closeConn(const ConnPtr& c) {
  c->link->close();
  if (conns_.erase(c) == 0) return;
  if (phase_ == Phase::kDone && conns_.empty()) lingerTimer_.cancel();
}

void RootService::Impl::finish() {
  if (phase_ == Phase::kDone && !listener_.isOpen()) return;
  phase_ = Phase::kDone;
  listener_.close();  // releases the port now
  initTimer_.cancel();
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
