#include "bootstrap/socket.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <memory>
#include <thread>

#include "common/env.h"
#include "common/log.h"

namespace trnccl::bootstrap {
namespace {

long long elapsedMs(const OpContext& op) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - op.started).count();
}

bool isPeerGone(const boost::system::error_code& ec) {
  return ec == asio::error::eof || ec == asio::error::connection_reset ||
         ec == asio::error::broken_pipe || ec == asio::error::connection_aborted;
}

}  // namespace

TimedSocket::TimedSocket() : socket_(io_) {}

Status TimedSocket::runUntil(const bool& done, const boost::system::error_code& ec,
                             const OpContext& op) {
  while (!done) {
    bool abort = aborted();
    if (abort || op.deadline.expired()) {
      // cancel() completes the pending operation with operation_aborted right away; drain it
      // so its handler no longer refers to our caller's stack. The socket stays open (and its
      // fd valid) so a concurrent abort() never shuts down a reused descriptor.
      boost::system::error_code ignored;
      socket_.cancel(ignored);
      io_.restart();
      io_.run();
      if (abort)
        return Status(Code::kInvalidUsage, fmt::format("bootstrap: aborted while {}", op.what));
      return Status(Code::kTimeout,
                    fmt::format("bootstrap: timed out after {} ms {}", elapsedMs(op), op.what));
    }
    if (io_.stopped()) io_.restart();
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(op.deadline.remaining());
    io_.run_one_for(
        std::clamp(left, std::chrono::milliseconds(1), std::chrono::milliseconds(kPollSlice)));
  }
  // abort() shuts the socket down, which completes a pending read with EOF: report the abort.
  if (aborted())
    return Status(Code::kInvalidUsage, fmt::format("bootstrap: aborted while {}", op.what));
  return ec ? failure(ec, op) : Status::ok();
}

Status TimedSocket::failure(const boost::system::error_code& ec, const OpContext& op) const {
  if (isPeerGone(ec)) {
    return Status(
        Code::kRemoteError,
        fmt::format("bootstrap: connection to the root lost ({}) while {}", ec.message(), op.what));
  }
  return systemError("bootstrap: {} while {}", ec.message(), op.what);
}

Status TimedSocket::connect(const tcp::endpoint& peer, const OpContext& op) {
  boost::system::error_code lastError;
  while (true) {
    bool done = false;
    boost::system::error_code ec;
    socket_.async_connect(peer, [&](const boost::system::error_code& e) {
      ec = e;
      done = true;
    });
    Status s = runUntil(done, ec, op);
    if (s.isOk()) {
      boost::system::error_code ignored;
      socket_.set_option(tcp::no_delay(true), ignored);
      fd_.store(socket_.native_handle(), std::memory_order_release);
      return s;
    }
    if (s.code() == Code::kTimeout || aborted()) {
      if (s.code() == Code::kTimeout && lastError) {
        return Status(Code::kTimeout,
                      fmt::format("{} (last error: {})", s.message(), lastError.message()));
      }
      return s;
    }
    // The root may not listen yet (TRNCCL_COMM_ID ranks may start before rank 0): retry.
    lastError = ec;
    boost::system::error_code ignored;
    socket_.close(ignored);
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(op.deadline.remaining());
    std::this_thread::sleep_for(std::min(left, std::chrono::milliseconds(kRetryInterval)));
  }
}

Status TimedSocket::write(const void* header, size_t headerBytes, const void* body,
                          size_t bodyBytes, const OpContext& op) {
  bool done = false;
  boost::system::error_code ec;
  std::array<asio::const_buffer, 2> bufs{asio::buffer(header, headerBytes),
                                         asio::buffer(body, bodyBytes)};
  asio::async_write(socket_, bufs, [&](const boost::system::error_code& e, size_t) {
    ec = e;
    done = true;
  });
  return runUntil(done, ec, op);
}

Status TimedSocket::read(void* data, size_t bytes, const OpContext& op) {
  bool done = false;
  boost::system::error_code ec;
  asio::async_read(socket_, asio::buffer(data, bytes),
                   [&](const boost::system::error_code& e, size_t) {
                     ec = e;
                     done = true;
                   });
  return runUntil(done, ec, op);
}

void TimedSocket::abort() {
  aborted_.store(true, std::memory_order_release);
  int fd = fd_.load(std::memory_order_acquire);
  if (fd >= 0) ::shutdown(fd, SHUT_RDWR);
}

bool matchInterface(std::string_view name, std::string_view spec) {
  bool exclude = !spec.empty() && spec.front() == '^';
  if (exclude) spec.remove_prefix(1);
  bool exact = !spec.empty() && spec.front() == '=';
  if (exact) spec.remove_prefix(1);
  while (!spec.empty()) {
    size_t comma = spec.find(',');
    std::string_view token = spec.substr(0, comma);
    if (!token.empty() && (exact ? name == token : name.substr(0, token.size()) == token)) {
      return !exclude;
    }
    if (comma == std::string_view::npos) break;
    spec.remove_prefix(comma + 1);
  }
  return exclude;
}

namespace {

std::string numericAddress(const sockaddr* sa) {
  char text[INET6_ADDRSTRLEN] = {};
  const void* raw =
      sa->sa_family == AF_INET
          ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(sa)->sin_addr)
          : static_cast<const void*>(&reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr);
  return inet_ntop(sa->sa_family, raw, text, sizeof(text)) != nullptr ? text : "";
}

bool usable(const ifaddrs* ifa) {
  if (ifa->ifa_addr == nullptr || (ifa->ifa_flags & IFF_UP) == 0) return false;
  if (ifa->ifa_addr->sa_family == AF_INET) return true;
  if (ifa->ifa_addr->sa_family != AF_INET6) return false;
  // Link-local IPv6 addresses need a scope id the unique id does not carry.
  const auto* v6 = reinterpret_cast<const sockaddr_in6*>(ifa->ifa_addr);
  return !IN6_IS_ADDR_LINKLOCAL(&v6->sin6_addr);
}

}  // namespace

Result<std::string> chooseBootstrapHost() {
  std::string forced = env::getString("TRNCCL_BOOTSTRAP_HOST", "");
  if (!forced.empty()) {
    boost::system::error_code ec;
    asio::ip::make_address(forced, ec);
    if (ec)
      return invalidArgument("bootstrap: TRNCCL_BOOTSTRAP_HOST={} is not a numeric address",
                             forced);
    return forced;
  }
  ifaddrs* raw = nullptr;
  if (getifaddrs(&raw) != 0) {
    TRN_WARN(kBoot, "bootstrap: getifaddrs failed ({}); using 127.0.0.1", errno);
    return std::string("127.0.0.1");
  }
  std::unique_ptr<ifaddrs, decltype(&freeifaddrs)> list(raw, freeifaddrs);
  std::string spec = env::getString("TRNCCL_SOCKET_IFNAME", "");
  std::string firstV6;
  for (const ifaddrs* ifa = list.get(); ifa != nullptr; ifa = ifa->ifa_next) {
    if (!usable(ifa)) continue;
    bool selected =
        spec.empty() ? (ifa->ifa_flags & IFF_LOOPBACK) == 0 : matchInterface(ifa->ifa_name, spec);
    if (!selected) continue;
    if (ifa->ifa_addr->sa_family == AF_INET) return numericAddress(ifa->ifa_addr);
    if (firstV6.empty() && !spec.empty()) firstV6 = numericAddress(ifa->ifa_addr);
  }
  if (!firstV6.empty()) return firstV6;
  if (!spec.empty())
    return invalidArgument("bootstrap: no interface matches TRNCCL_SOCKET_IFNAME={}", spec);
  return std::string("127.0.0.1");
}

}  // namespace trnccl::bootstrap
