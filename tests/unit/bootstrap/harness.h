// Helpers for the bootstrap tests: N ranks as N threads of this process, and raw loopback
// sockets to play hostile or broken peers. Everything uses 127.0.0.1 only.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.h"

namespace trnccl::bootstrap::test {

inline UniqueId newId() {
  setenv("TRNCCL_BOOTSTRAP_HOST", "127.0.0.1", 1);
  auto id = createUniqueId();
  EXPECT_TRUE(id.isOk()) << id.status().message();
  return id.isOk() ? *id : UniqueId{};
}

inline std::vector<std::byte> infoFor(int rank) {
  // Different lengths per rank, so the table's offsets are exercised.
  return std::vector<std::byte>(static_cast<size_t>(rank % 5) + 3, static_cast<std::byte>(rank));
}

// Runs `body(rank)` on one thread per rank and joins them all.
inline void runThreads(const std::vector<int>& ranks, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  for (int r : ranks) threads.emplace_back(body, r);
  for (auto& t : threads) t.join();
}

inline std::vector<int> allRanks(int n) {
  std::vector<int> ranks(n);
  for (int r = 0; r < n; ++r) ranks[r] = r;
  return ranks;
}

inline std::unique_ptr<Bootstrap> connectRank(
    const UniqueId& id, int rank, int nranks,
    std::chrono::milliseconds budget = std::chrono::milliseconds(10000)) {
  auto info = infoFor(rank);
  auto b = Bootstrap::connect(id, rank, nranks, info, Deadline::after(budget));
  EXPECT_TRUE(b.isOk()) << "rank " << rank << ": " << b.status().message();
  return b.isOk() ? std::move(b.value()) : nullptr;
}

// A raw loopback socket, closed on destruction; reads wait at most `ms`.
class RawSocket {
 public:
  explicit RawSocket(uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~RawSocket() { ::close(fd_); }
  bool connected() const { return connected_; }
  bool sendAll(const void* data, size_t n) {
    return ::send(fd_, data, n, MSG_NOSIGNAL) == static_cast<ssize_t>(n);
  }
  // Bytes read until `n`, EOF, error or `ms` passed; -1 on timeout with nothing read.
  ssize_t recvSome(void* data, size_t n, int ms) {
    size_t got = 0;
    auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (got < n) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                      end - std::chrono::steady_clock::now())
                      .count();
      pollfd p{fd_, POLLIN, 0};
      if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) return got ? got : -1;
      ssize_t r = ::recv(fd_, static_cast<char*>(data) + got, n - got, 0);
      if (r <= 0) return static_cast<ssize_t>(got);
      got += r;
    }
    return static_cast<ssize_t>(got);
  }
  // Whether the peer closed the connection within `ms` (reads and drops anything before EOF).
  bool closedWithin(int ms) {
    char buf[256];
    auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < end) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) > 0 && ::recv(fd_, buf, sizeof(buf), 0) <= 0) return true;
    }
    return false;
  }

 private:
  int fd_;
  bool connected_ = false;
};

}  // namespace trnccl::bootstrap::test
