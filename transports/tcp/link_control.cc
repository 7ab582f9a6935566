// The control socket of a Link (link.h): heartbeats out every interval, the peer's heartbeats
// in, and the liveness check (transports/core/liveness.h). All on the I/O thread.
#include <boost/asio/write.hpp>
#include <cstring>

#include "common/log.h"
#include "transports/tcp/link.h"
#include "transports/tcp/wire.h"

namespace trnccl::transport::tcp {

using boost::system::error_code;

void Link::startControl() {
  readControl();
  if (liveness_.heartbeat.count() > 0) armTicker();
}

void Link::readControl() {
  control_.async_read_some(
      asio::buffer(controlIn_),
      [self = shared_from_this()](const error_code& ec, size_t n) { self->onControlRead(ec, n); });
}

// Only heartbeats travel here: anything else means the stream is not what the handshake
// agreed on, and the link cannot be trusted. End of file is the peer closing in order; an
// error (a reset: the peer died, or something on the path reset the connection) fails the
// link, so that a rank only receiving on a reset link learns it from its next heartbeat.
void Link::onControlRead(const error_code& ec, size_t bytes) {
  if (closed_) return;
  if (ec == asio::error::eof) return endControl(ec);
  if (ec) {
    endControl(ec);
    return fail(Status(Code::kRemoteError,
                       fmt::format("tcp: connection to rank {} ({}) closed: {} (control socket)",
                                   peer_, streams_[0]->name, ec.message()),
                       peer_));
  }
  heard_.touch();
  std::array<std::byte, sizeof(kHeartbeat)> pattern;
  std::memcpy(pattern.data(), &kHeartbeat, sizeof(kHeartbeat));
  for (size_t i = 0; i < bytes; ++i) {
    if (controlIn_[i] != pattern[(controlRead_ + i) % pattern.size()]) {
      closeControl();
      return fail(Status(Code::kInternalError,
                         fmt::format("tcp: rank {} ({}) sent something else than heartbeats on "
                                     "the control socket (byte {} of it)",
                                     peer_, streams_[0]->name, controlRead_ + i),
                         peer_));
    }
  }
  controlRead_ += bytes;
  readControl();
}

// No more heartbeats either way, so no more liveness check.
void Link::endControl(const error_code& ec) {
  if (!controlOpen_.exchange(false)) return;
  TRN_TRACE(kNet, "tcp: control socket to rank {} ({}) ended: {}", peer_, streams_[0]->name,
            ec.message());
  ticker_.cancel();
}

void Link::armTicker() {
  ticker_.expires_after(liveness_.heartbeat);
  ticker_.async_wait([self = shared_from_this()](const error_code& ec) {
    if (!ec) self->onTick();
  });
}

void Link::onTick() {
  if (closed_ || !controlOpen_.load() || failed()) return;
  if (!liveness()) return;  // failed it
  if (!controlWriting_) {
    controlWriting_ = true;
    // A failed write stays "writing": the pending read reports the end of file or the reset.
    asio::async_write(control_, asio::buffer(&kHeartbeat, sizeof(kHeartbeat)),
                      [self = shared_from_this()](const error_code& ec, size_t) {
                        if (!ec) self->controlWriting_ = false;
                      });
  }
  armTicker();
}

// An orderly end the peer can tell from a failure: end of file first (shutdown), then read
// what already arrived, since closing a socket with unread bytes resets the connection. A
// heartbeat landing between the two still causes a reset, but after the end of file, which
// the peer has read or will read first.
void Link::closeControl() {
  controlOpen_.store(false);
  ticker_.cancel();
  error_code ec;
  control_.shutdown(tcp::socket::shutdown_send, ec);
  control_.non_blocking(true, ec);
  while (!ec && control_.available(ec) > 0) control_.read_some(asio::buffer(controlIn_), ec);
  control_.close(ec);
}

}  // namespace trnccl::transport::tcp
