// A raw loopback client socket, for tests that play hostile or broken peers of a listener
// (the net layer's, the bootstrap root's). 127.0.0.1 only.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace trnccl::transport::net::test {

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
  // Ends this side's writes (the peer reads end of file); reads still work.
  void shutdownWrite() { ::shutdown(fd_, SHUT_WR); }
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

}  // namespace trnccl::transport::net::test
