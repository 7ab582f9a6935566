// Socket helpers of the bootstrap: a client socket whose every operation has a deadline and can
// be aborted from another thread, and the choice of the root's address.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstddef>
#include <string>

#include "common/status.h"
#include "common/wait.h"

namespace trnccl::bootstrap {

namespace asio = boost::asio;
using asio::ip::tcp;

// What a bounded operation is for, so its errors read "timed out after 500 ms waiting for ...".
struct OpContext {
  Deadline deadline;
  Clock::time_point started;
  std::string what;  // e.g. "waiting for the rank table from the root (rank 3 of 4)"
};

// A blocking-looking client socket built on async operations and io_context::run_one_for, so a
// wait never outlives its deadline and abort() (any thread) ends it within kPollSlice.
class TimedSocket {
 public:
  static constexpr std::chrono::milliseconds kPollSlice{50};
  static constexpr std::chrono::milliseconds kRetryInterval{50};

  TimedSocket();
  TimedSocket(const TimedSocket&) = delete;
  TimedSocket& operator=(const TimedSocket&) = delete;

  // Connects, retrying every kRetryInterval while the root is not listening yet.
  Status connect(const tcp::endpoint& peer, const OpContext& op);
  Status write(const void* header, size_t headerBytes, const void* body, size_t bodyBytes,
               const OpContext& op);
  Status read(void* data, size_t bytes, const OpContext& op);
  // Thread-safe: makes the current and every later operation fail promptly.
  void abort();
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }
  // The connected descriptor (-1 before connect), for a non-blocking peek between operations.
  int fd() const { return fd_.load(std::memory_order_acquire); }

 private:
  // Runs the io_context until `done`, the deadline, or abort; cancels the operation if it
  // has to stop early. `ec` is the operation's result once done.
  Status runUntil(const bool& done, const boost::system::error_code& ec, const OpContext& op);
  Status failure(const boost::system::error_code& ec, const OpContext& op) const;

  asio::io_context io_;
  tcp::socket socket_;
  std::atomic<bool> aborted_{false};
  std::atomic<int> fd_{-1};  // published once connected, for abort()'s shutdown()
};

struct RootHost {
  std::string address;    // numeric
  std::string interface;  // empty when TRNCCL_BOOTSTRAP_HOST gave the address
};

// The numeric address the root listens on: TRNCCL_BOOTSTRAP_HOST if set, else the address of
// the interface TRNCCL_SOCKET_IFNAME / TRNCCL_SOCKET_FAMILY select, by the same rule as the
// tcp transport's listeners (transports/net/interfaces.h).
Result<RootHost> chooseBootstrapHost();

}  // namespace trnccl::bootstrap
