#include "transports/net/listener.h"

#include <algorithm>

#include "transports/net/address.h"

namespace trnccl::transport::net {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

Incoming::Incoming(tcp::socket socket, Listener& listener)
    : socket_(std::move(socket)),
      deadline_(socket_.get_executor()),
      listener_(listener),
      peer_(remoteName(socket_)) {}

void Incoming::admit() {
  if (!inHandshake_) return;
  inHandshake_ = false;
  deadline_.cancel();
  listener_.endHandshake();
}

void Incoming::close() {
  if (!open_) return;
  open_ = false;
  error_code ignored;
  deadline_.cancel();
  socket_.shutdown(tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  if (inHandshake_) {
    inHandshake_ = false;
    listener_.endHandshake();
  }
}

Listener::Listener(asio::io_context& io, ListenerOptions options)
    : options_(std::move(options)), acceptor_(io), retry_(io), where_(options_.name) {}

Status Listener::listen(const tcp::endpoint& at) {
  error_code ec;
  acceptor_.open(at.protocol(), ec);
  // A fixed port (TRNCCL_COMM_ID) must be usable again while old connections linger.
  if (!ec && at.port() != 0) acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor_.bind(at, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    error_code ignored;
    acceptor_.close(ignored);
    return systemError("{} cannot listen on {}: {}", options_.name, nameOf(at), ec.message());
  }
  where_ = fmt::format("{} at {}", options_.name, nameOf(local()));
  return Status::ok();
}

tcp::endpoint Listener::local() const {
  error_code ec;
  tcp::endpoint endpoint = acceptor_.local_endpoint(ec);
  return ec ? tcp::endpoint() : endpoint;
}

void Listener::start(OnAccept onAccept) {
  onAccept_ = std::move(onAccept);
  accept();
}

void Listener::accept() {
  if (!acceptor_.is_open()) return;
  if (pending_ >= options_.maxPending) {
    parked_ = true;
    return;
  }
  acceptor_.async_accept(
      [this](const error_code& ec, tcp::socket socket) { onAccepted(ec, std::move(socket)); });
}

void Listener::onAccepted(const error_code& ec, tcp::socket socket) {
  if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
  if (ec) {
    // E.g. out of descriptors: back off instead of spinning on the error or giving up.
    if (log::enabled(log::Level::kWarn, options_.subsys)) {
      log::write(log::Level::kWarn, options_.subsys,
                 fmt::format("{} accept failed: {}; retrying", where_, ec.message()));
    }
    retry_.expires_after(kAcceptRetry);
    retry_.async_wait([this](const error_code& e) {
      if (!e) accept();
    });
    return;
  }
  auto in = std::make_shared<Incoming>(std::move(socket), *this);
  error_code ignored;
  in->socket_.set_option(tcp::no_delay(true), ignored);
  ++pending_;
  Clock::time_point now = Clock::now();
  Clock::time_point until = options_.notAfter - now > options_.handshake
                                ? now + options_.handshake
                                : std::max(options_.notAfter, now);
  in->deadline_.expires_at(until);
  auto allowed = std::chrono::duration_cast<std::chrono::milliseconds>(until - now);
  in->deadline_.async_wait([this, in, allowed](const error_code& e) {
    if (e || !in->inHandshake_) return;
    reject(*in, fmt::format("no handshake within {} ms", allowed.count()));
  });
  onAccept_(in);
  accept();
}

void Listener::reject(Incoming& in, std::string_view why) {
  if (in.isOpen()) {
    log::Level level = ++rejected_ <= kWarnRejections ? log::Level::kWarn : log::Level::kInfo;
    if (log::enabled(level, options_.subsys)) {
      log::write(level, options_.subsys,
                 fmt::format("{} rejected a connection from {}: {}", where_, in.peer(), why));
    }
  }
  in.close();
}

void Listener::endHandshake() {
  --pending_;
  if (parked_) {
    parked_ = false;
    accept();
  }
}

void Listener::close() {
  error_code ignored;
  acceptor_.close(ignored);
  retry_.cancel();
  parked_ = false;
}

}  // namespace trnccl::transport::net
