// The collective steps of the TCP transport's setup (setup.h); one socket's handshake is in
// handshake.cc.
#include "transports/tcp/setup.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <set>

#include "common/env.h"
#include "common/log.h"
#include "transports/core/liveness.h"
#include "transports/core/setup.h"
#include "transports/net/address.h"
#include "transports/net/interfaces.h"
#include "transports/tcp/listen_address.h"
#include "transports/tcp/setup_impl.h"
#include "transports/tcp/testing.h"

namespace trnccl::transport::tcp {

namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

// Measured on the 2-core CI machine over loopback, see tcp_transport.h.
constexpr uint32_t kDefaultSockets = 1;
constexpr int64_t kMaxSocketBuffer = int64_t{1} << 30;
// Sets the congestion control `name` on `socket` (transports/core/congestion.h).
void setCongestion(tcp::socket& socket, const std::string& name, int rank) {
  if (transport::setCongestion(socket.native_handle(), name, "tcp", rank)) {
    testing::counters().add(testing::Event::kCongestionSet, 1);
  }
}

net::ListenerOptions listenerOptions(const SetupContext& ctx) {
  return {.name = fmt::format("tcp: rank {}", ctx.rank),
          .subsys = log::kNet,
          .handshake = kHandshakeTimeout,
          .notAfter = ctx.deadline.at(),
          .maxPending = kMaxPendingHandshakes};
}

}  // namespace

Setup::Setup(SetupContext& ctx, const std::vector<int>& peers)
    : ctx_(ctx), peers_(peers), listener_(io_, listenerOptions(ctx)) {}

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
  Result<net::Interface> chosen = net::chooseInterface();
  if (!chosen) return chosen.status();
  TRN_TRY(listener_.listen(tcp::endpoint(chosen->address, 0)));
  TRN_INFO(kNet, "tcp: rank {} listening on {} ({})", ctx_.rank, net::nameOf(listener_.local()),
           chosen->name);
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
    slot.heartbeat = heartbeatInterval(liveness_, std::chrono::milliseconds(theirs.livenessMs));
    slot.sockets.resize(slot.nsocks + 1);  // + the control socket
    slot.names.resize(slot.nsocks + 1);
    slot.claimed.assign(slot.nsocks + 1, false);
    missing_ += slot.nsocks + 1;
    slotOf_[static_cast<size_t>(peer)] = static_cast<int>(slots_.size());
    slots_.push_back(std::move(slot));
  }
  return Status::ok();
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
    if (have == slot.sockets.size()) continue;
    out += fmt::format("{}{} rank {} ({} of {})", out.empty() ? "" : ", ",
                       slot.peer < ctx_.rank ? "from" : "to", slot.peer, have, slot.sockets.size());
  }
  return out;
}

// ---- the whole setup ----

Status Setup::connectAll(const std::vector<ListenAddress>& addresses) {
  TRN_TRY(prepareSlots(addresses));
  if (missing_ == 0) return Status::ok();
  if (listener_.isOpen()) {
    listener_.start([this](const std::shared_ptr<net::Incoming>& in) { onIncoming(in); });
  }
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].peer < ctx_.rank) continue;
    tcp::endpoint endpoint = endpointOf(addresses[static_cast<size_t>(slots_[i].peer)]);
    for (uint32_t index = 0; index <= slots_[i].nsocks; ++index) dial(i, index, endpoint);
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
    peer.names.pop_back();  // the control socket's: the same peer address
    peer.heartbeat = slot.heartbeat;
    peer.timeout = liveness_;
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
    // The data sockets' buffers (TCP_NODELAY is set by the handshake on both ends already).
    for (size_t i = 0; bufferBytes_ > 0 && i + 1 < peer.sockets.size(); ++i) {
      error_code ignored;  // the kernel clamps to net.core.[rw]mem_max; nothing to fail on
      peer.sockets[i].set_option(asio::socket_base::send_buffer_size(bufferBytes_), ignored);
      peer.sockets[i].set_option(asio::socket_base::receive_buffer_size(bufferBytes_), ignored);
    }
    const char* congestion = congestionSetting();
    for (size_t i = 0; i + 1 < peer.sockets.size(); ++i) {
      const std::string cc =
          congestionControl(congestion, sameHostSocket(peer.sockets[i].native_handle()));
      if (!cc.empty()) setCongestion(peer.sockets[i], cc, ctx_.rank);
    }
    peer.control.emplace(std::move(peer.sockets.back()));
    peer.sockets.pop_back();
    TRN_INFO(kNet, "tcp: rank {} <-> rank {}: {} socket(s) + control, {}, heartbeat every {} ms",
             ctx_.rank, slot.peer, slot.nsocks, slot.names[0], slot.heartbeat.count());
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
  Result<int> buffers = socketBufferBytes();
  if (local && !buffers) local = buffers.status();
  if (local) bufferBytes_ = *buffers;
  if (local) local = openListener();
  liveness_ = std::min(livenessTimeout(), std::chrono::milliseconds(UINT32_MAX));
  ListenAddress mine;
  mine.ok = local.isOk();
  mine.nsocks = nsocks_;
  mine.livenessMs = static_cast<uint32_t>(liveness_.count());
  if (listener_.isOpen()) publish(listener_.local(), mine);
  Result<std::vector<ListenAddress>> addresses = exchange(ctx_, mine, "tcp");
  if (!addresses) return addresses.status();
  TRN_TRY(firstFailure(local, *addresses, "tcp", "open its tcp listener"));

  local = connectAll(*addresses);
  listener_.close();
  TRN_TRY(agree(ctx_, local, "tcp", "connect its tcp peers"));
  if (slots_.empty()) return std::vector<PeerSockets>{};
  if (target == nullptr) return invalidArgument("tcp: no I/O context for {} peers", slots_.size());
  return rehome(*target);
}

Result<uint32_t> socketsPerPeer() {
  int64_t n = env::getInt("TRNCCL_SOCKET_NSOCKS", kDefaultSockets);
  if (n < 1 || n > kMaxSockets) {
    return invalidArgument("tcp: TRNCCL_SOCKET_NSOCKS={} is outside [1, {}]", n, kMaxSockets);
  }
  return static_cast<uint32_t>(n);
}

Result<int> socketBufferBytes() {
  int64_t n = env::getInt("TRNCCL_SOCKET_BUFSIZE", 0);
  if (n < 0 || n > kMaxSocketBuffer) {
    return invalidArgument("tcp: TRNCCL_SOCKET_BUFSIZE={} is outside [0, {}]", n, kMaxSocketBuffer);
  }
  return static_cast<int>(n);
}

Result<std::vector<PeerSockets>> establish(SetupContext& ctx, const std::vector<int>& peers,
                                           boost::asio::io_context* target) {
  return Setup(ctx, peers).run(target);
}

}  // namespace trnccl::transport::tcp
