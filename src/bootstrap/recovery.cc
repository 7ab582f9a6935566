// The asking side of recovery (recovery.h): recovery addresses, liveness probes, and a
// survivor's ask to the leader of a shrink. The leader's side is recovery_port.cc.
#include "bootstrap/recovery.h"

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <thread>

#include "bootstrap/bootstrap_wire.h"
#include "bootstrap/socket.h"
#include "common/bytes.h"
#include "transports/net/address.h"

namespace trnccl::bootstrap {
namespace {

constexpr size_t kIdBytes = 128;  // trncclUniqueId
constexpr std::chrono::milliseconds kAskRetry{50};

Result<tcp::endpoint> endpointOf(const RecoveryAddress& a) {
  boost::system::error_code ec;
  auto address = asio::ip::make_address(a.host, ec);
  if (ec || a.port == 0) return invalidArgument("recovery: bad address '{}'", a.name());
  return tcp::endpoint(address, a.port);
}

// Reads the leader's answer: the id, or its error. `answered` tells a real answer (an error
// included) from a connection that closed before any.
Result<UniqueId> readAnswer(TimedSocket& socket, uint64_t magic, const OpContext& op,
                            bool& answered) {
  wire::HeaderBytes bytes;
  TRN_TRY(socket.read(bytes.data(), bytes.size(), op));
  answered = true;
  wire::Header h = wire::decode(bytes);
  bool error = h.type == wire::Type::kError;
  transport::net::HeaderCheck check = wire::check(h, error ? wire::kMaxErrorBytes : kIdBytes);
  if (!check.ok() || h.idMagic != magic || (!error && h.type != wire::Type::kShrinkId) ||
      (!error && h.length != kIdBytes)) {
    return Status(Code::kRemoteError,
                  fmt::format("recovery: malformed answer ({}) while {}",
                              check.ok() ? "wrong type, magic or length" : check.problem, op.what));
  }
  std::string body(h.length, '\0');
  TRN_TRY(socket.read(body.data(), body.size(), op));
  if (error) return Status(wire::codeFromWire(h.arg), body, h.rank);
  return UniqueId::decode(body.data());
}

}  // namespace

std::string RecoveryAddress::name() const {
  boost::system::error_code ec;
  auto address = asio::ip::make_address(host, ec);
  return ec ? host + ":" + std::to_string(port)
            : transport::net::nameOf(tcp::endpoint(address, port));
}

std::array<std::byte, RecoveryAddress::kBytes> RecoveryAddress::encode() const {
  std::array<std::byte, kBytes> out{};
  size_t n = std::min(host.size(), kBytes - 3);
  bytes::put<uint16_t>(&out[0], port);
  out[2] = static_cast<std::byte>(n);
  std::memcpy(&out[3], host.data(), n);
  return out;
}

RecoveryAddress RecoveryAddress::decode(std::span<const std::byte> in) {
  RecoveryAddress a;
  if (in.size() != kBytes) return a;
  size_t n = static_cast<size_t>(in[2]);
  if (n == 0 || n > kBytes - 3) return a;
  a.port = bytes::get<uint16_t>(&in[0]);
  a.host.assign(reinterpret_cast<const char*>(&in[3]), n);
  if (!endpointOf(a)) return {};
  return a;
}

const char* describe(Liveness liveness) {
  switch (liveness) {
    case Liveness::kAlive:
      return "alive";
    case Liveness::kGone:
      return "gone (its recovery port refused the connection: the process exited)";
    case Liveness::kUnreachable:
      return "unreachable (its recovery port did not answer)";
  }
  return "?";
}

std::vector<Liveness> probe(const std::vector<RecoveryAddress>& peers,
                            std::chrono::milliseconds timeout) {
  asio::io_context io;
  std::vector<Liveness> result(peers.size(), Liveness::kAlive);
  std::vector<std::unique_ptr<tcp::socket>> sockets;
  for (size_t i = 0; i < peers.size(); ++i) {
    auto endpoint = endpointOf(peers[i]);
    if (!peers[i].valid() || !endpoint) continue;
    result[i] = Liveness::kUnreachable;  // until it answers
    auto& s = sockets.emplace_back(std::make_unique<tcp::socket>(io));
    s->async_connect(*endpoint, [&result, i](const boost::system::error_code& ec) {
      if (!ec) {
        result[i] = Liveness::kAlive;
      } else if (ec == asio::error::connection_refused || ec == asio::error::connection_reset) {
        result[i] = Liveness::kGone;
      }
    });
  }
  // Handlers run only inside run_for: those still pending are destroyed with `io`, unrun.
  if (!sockets.empty()) io.run_for(timeout);
  for (auto& s : sockets) {
    boost::system::error_code ignored;
    s->close(ignored);
  }
  return result;
}

Result<UniqueId> askToShrink(const RecoveryAddress& leader, int leaderRank, const ShrinkAsk& mine,
                             Deadline deadline) {
  auto endpoint = endpointOf(leader);
  if (!endpoint) return endpoint.status();
  std::vector<std::byte> body(4 + 4 * mine.excluded.size());
  bytes::put<uint32_t>(&body[0], mine.attempt);
  for (size_t i = 0; i < mine.excluded.size(); ++i) {
    bytes::put<uint32_t>(&body[4 + 4 * i], static_cast<uint32_t>(mine.excluded[i]));
  }
  wire::HeaderBytes header = wire::encode({.type = wire::Type::kShrinkAsk,
                                           .idMagic = mine.parentMagic,
                                           .rank = mine.rank,
                                           .arg = static_cast<int32_t>(mine.excluded.size()),
                                           .length = body.size()});
  std::string what = fmt::format("rank {} asking rank {} at {} for the shrunk communicator",
                                 mine.rank, leaderRank, leader.name());
  while (true) {
    TimedSocket socket;
    OpContext op{deadline, Clock::now(), what};
    bool answered = false;
    Result<UniqueId> id = [&]() -> Result<UniqueId> {
      TRN_TRY(socket.connect(*endpoint, op));
      TRN_TRY(socket.write(header.data(), header.size(), body.data(), body.size(), op));
      return readAnswer(socket, mine.parentMagic, op, answered);
    }();
    // The leader closes what reaches its port while it does not lead yet: ask again.
    if (id || answered || id.status().code() != Code::kRemoteError || deadline.expired()) {
      return id;
    }
    std::this_thread::sleep_for(std::min<std::chrono::milliseconds>(
        kAskRetry, std::chrono::duration_cast<std::chrono::milliseconds>(deadline.remaining())));
  }
}

}  // namespace trnccl::bootstrap
