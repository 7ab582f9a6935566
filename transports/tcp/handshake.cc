// One socket's handshake in the TCP transport's setup (setup.h), on either end: the acceptor
// reads the connector's Handshake, checks it and answers with its own; the connector checks
// the answer. Either side closes a socket on anything unexpected.
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include "common/log.h"
#include "transports/net/address.h"
#include "transports/tcp/setup_impl.h"
#include "transports/tcp/testing.h"

namespace trnccl::transport::tcp {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

namespace {

constexpr auto kConnectTimeout = std::chrono::seconds(5);
constexpr auto kRetryInterval = std::chrono::milliseconds(100);

net::Preamble preambleOf(const Handshake& h) { return {h.magic, h.version, 0}; }

}  // namespace

Handshake Setup::handshakeFor(const Slot& slot, uint32_t index) const {
  Handshake h;
  h.rank = ctx_.rank;
  h.commHash = ctx_.commHash;
  h.socketIndex = index;
  h.nsocks = slot.nsocks;
  return h;
}

// ---- accepting (the listener bounds each handshake: net/listener.h) ----

void Setup::onIncoming(const std::shared_ptr<net::Incoming>& link) {
  if (finished_) return;
  auto in = std::make_shared<Inbound>();
  in->link = link;
  asio::async_read(link->socket(), asio::buffer(&in->hello, sizeof(in->hello)),
                   [this, in](const error_code& e, size_t) { onHello(in, e); });
}

Status Setup::checkHello(const Handshake& hello) const {
  net::HeaderCheck header = net::checkHeader(kHandshakeProtocol, preambleOf(hello), 0);
  if (!header.ok()) return invalidArgument("{}", header.problem);
  if (hello.commHash != ctx_.commHash) {
    return invalidArgument("communicator {:#x}, expected {:#x}", hello.commHash, ctx_.commHash);
  }
  if (hello.rank < 0 || hello.rank >= ctx_.rank || slotOf_[static_cast<size_t>(hello.rank)] < 0) {
    return invalidArgument("rank {} is not a tcp peer that connects to rank {}", hello.rank,
                           ctx_.rank);
  }
  const Slot& slot = slots_[static_cast<size_t>(slotOf_[static_cast<size_t>(hello.rank)])];
  if (hello.nsocks != slot.nsocks || hello.socketIndex > slot.nsocks) {
    return invalidArgument("socket {} of {} (+ control), expected {} sockets", hello.socketIndex,
                           hello.nsocks, slot.nsocks);
  }
  if (slot.claimed[hello.socketIndex]) {
    return invalidArgument("duplicate socket {} from rank {}", hello.socketIndex, hello.rank);
  }
  return Status::ok();
}

void Setup::onHello(const std::shared_ptr<Inbound>& in, const error_code& ec) {
  if (finished_) return;
  Status verdict =
      ec ? invalidArgument("no complete handshake ({})", ec.message()) : checkHello(in->hello);
  if (!verdict) {
    testing::counters().add(testing::Event::kRejectedHandshakes);
    listener_.reject(*in->link, verdict.message());
    return;
  }
  in->slot = static_cast<size_t>(slotOf_[static_cast<size_t>(in->hello.rank)]);
  in->index = in->hello.socketIndex;
  slots_[in->slot].claimed[in->index] = true;
  in->reply = handshakeFor(slots_[in->slot], in->index);
  asio::async_write(in->link->socket(), asio::buffer(&in->reply, sizeof(in->reply)),
                    [this, in](const error_code& e, size_t) {
                      if (finished_) return;
                      in->link->admit();
                      if (e) {
                        // The connector fails on its side and reports; let it retry here.
                        slots_[in->slot].claimed[in->index] = false;
                        TRN_WARN(kNet, "tcp: rank {} could not answer {}: {}", ctx_.rank,
                                 in->link->peer(), e.message());
                        in->link->close();
                        return;
                      }
                      place(in->slot, in->index, std::move(in->link->socket()), in->link->peer());
                    });
}

// ---- connecting ----

void Setup::dial(size_t slot, uint32_t index, const tcp::endpoint& endpoint) {
  if (finished_) return;
  auto out = std::make_shared<Outbound>(io_);
  out->slot = slot;
  out->index = index;
  out->name = net::nameOf(endpoint);
  out->timer.expires_at(std::min(ctx_.deadline.at(), Clock::now() + kConnectTimeout));
  out->timer.async_wait([out](const error_code& e) {
    error_code ignored;
    if (!e) out->socket.close(ignored);  // the connect completes with operation_aborted
  });
  out->socket.async_connect(
      endpoint, [this, out, endpoint](const error_code& e) { onConnected(out, endpoint, e); });
}

void Setup::onConnected(const std::shared_ptr<Outbound>& out, const tcp::endpoint& endpoint,
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

void Setup::onReply(const std::shared_ptr<Outbound>& out, const error_code& ec) {
  if (finished_) return;
  const Slot& slot = slots_[out->slot];
  const Handshake& r = out->reply;
  net::HeaderCheck header = net::checkHeader(kHandshakeProtocol, preambleOf(r), 0);
  std::string problem;
  if (ec) {
    problem = fmt::format("no handshake answer ({})", ec.message());
  } else if (!header.ok()) {
    problem = fmt::format("bad handshake answer: {}", header.problem);
  } else if (r.commHash != ctx_.commHash || r.rank != slot.peer || r.socketIndex != out->index ||
             r.nsocks != slot.nsocks) {
    problem = fmt::format("bad handshake answer (communicator {:#x}, rank {}, socket {} of {})",
                          r.commHash, r.rank, r.socketIndex, r.nsocks);
  }
  if (!problem.empty()) {
    return fail(Status(Code::kRemoteError,
                       fmt::format("tcp: rank {} connecting socket {} to rank {} at {}: {}",
                                   ctx_.rank, out->index, slot.peer, out->name, problem),
                       slot.peer));
  }
  place(out->slot, out->index, std::move(out->socket), out->name);
}

}  // namespace trnccl::transport::tcp
