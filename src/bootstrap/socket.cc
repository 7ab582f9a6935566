#include "bootstrap/socket.h"

#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <thread>

#include "common/env.h"
#include "common/log.h"
#include "transports/net/interfaces.h"

namespace trnccl::bootstrap {
namespace {

long long elapsedMs(const OpContext& op) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - op.started).count();
}

bool isPeerGone(const boost::system::error_code& ec) {
  return ec == asio::error::eof || ec == asio::error::connection_reset ||
         ec == asio::error::broken_pipe || ec == asio::error::connection_aborted;
}

// Who is missing when the root cannot be reached: the root lives in the process that made the
// unique id (rank 0's with TRNCCL_COMM_ID).
constexpr const char* kRootOwner =
    "the process hosting the root (the one that made the unique "
    "id; rank 0 with TRNCCL_COMM_ID)";

std::string connectHint(const boost::system::error_code& ec) {
  if (ec == asio::error::connection_refused) {
    return fmt::format("; nothing listens there: {} has not started it or is gone", kRootOwner);
  }
  if (ec == asio::error::network_unreachable || ec == asio::error::host_unreachable) {
    return "; this host has no route to the root's address: check TRNCCL_SOCKET_IFNAME (or "
           "TRNCCL_BOOTSTRAP_HOST) where the id was made";
  }
  return "";
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
    return Status(Code::kRemoteError,
                  fmt::format("bootstrap: connection to the root lost ({}) while {}: {} is gone",
                              ec.message(), op.what, kRootOwner));
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
        return Status(Code::kTimeout, fmt::format("{} (last error: {}{})", s.message(),
                                                  lastError.message(), connectHint(lastError)));
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

Result<RootHost> chooseBootstrapHost() {
  std::string forced = env::getString("TRNCCL_BOOTSTRAP_HOST", "");
  if (!forced.empty()) {
    boost::system::error_code ec;
    asio::ip::make_address(forced, ec);
    if (ec)
      return invalidArgument("bootstrap: TRNCCL_BOOTSTRAP_HOST={} is not a numeric address",
                             forced);
    return RootHost{.address = forced, .interface = ""};
  }
  Result<transport::net::Interface> chosen = transport::net::chooseInterface();
  if (!chosen) {
    return Status(chosen.status().code(),
                  fmt::format("bootstrap: no address for the root: {}", chosen.status().message()));
  }
  TRN_INFO(kBoot, "bootstrap: root address {} ({})", chosen->address.to_string(), chosen->name);
  return RootHost{.address = chosen->address.to_string(), .interface = chosen->name};
}

}  // namespace trnccl::bootstrap
