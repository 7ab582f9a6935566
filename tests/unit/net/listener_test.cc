// The hardened accept: every connection's handshake has a deadline that trickling bytes do not
// extend, admitted connections outlive it, junk is closed without holding up real peers, and
// at most maxPending handshakes run at once.
//
// The protocol under test: a peer sends "hello" and is answered "ok"; anything else is junk.
#include "transports/net/listener.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <cstring>
#include <thread>
#include <vector>

#include "unit/net/raw_socket.h"

namespace trnccl::transport::net {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using Ms = std::chrono::milliseconds;
using test::RawSocket;

long long msSince(Clock::time_point start) {
  return std::chrono::duration_cast<Ms>(Clock::now() - start).count();
}

bool sendText(RawSocket& s, std::string_view bytes) {
  return s.sendAll(bytes.data(), bytes.size());
}

// Up to `n` bytes that arrive within `ms`.
std::string receiveText(RawSocket& s, size_t n, int ms) {
  std::string got(n, '\0');
  ssize_t r = s.recvSome(got.data(), n, ms);
  got.resize(r > 0 ? static_cast<size_t>(r) : 0);
  return got;
}

// A listener on 127.0.0.1 serving the hello protocol on its own I/O thread.
class HelloServer {
 public:
  explicit HelloServer(ListenerOptions options) : listener_(io_, std::move(options)) {
    Status s = listener_.listen({asio::ip::make_address("127.0.0.1"), 0});
    EXPECT_TRUE(s.isOk()) << s.message();
    port_ = listener_.local().port();  // before the I/O thread uses the listener
    listener_.start([this](const std::shared_ptr<Incoming>& in) { onAccept(in); });
    thread_ = std::thread([this] { io_.run(); });
  }
  ~HelloServer() {
    asio::post(io_, [this] {
      listener_.close();
      for (auto& in : accepted_) in->close();
    });
    thread_.join();  // run() returns once nothing is left to do
  }
  uint16_t port() const { return port_; }
  int maxPendingSeen() const { return maxPending_.load(); }
  int admitted() const { return admittedCount_.load(); }

 private:
  struct Hello {
    std::shared_ptr<Incoming> in;
    std::array<char, 5> bytes{};
  };

  void onAccept(const std::shared_ptr<Incoming>& in) {
    maxPending_ = std::max(maxPending_.load(), listener_.pending());
    accepted_.push_back(in);
    auto hello = std::make_shared<Hello>(Hello{in});
    asio::async_read(in->socket(), asio::buffer(hello->bytes),
                     [this, hello](const boost::system::error_code& ec, size_t) {
                       Incoming& in = *hello->in;
                       if (ec) return listener_.reject(in, ec.message());
                       if (std::memcmp(hello->bytes.data(), "hello", 5) != 0) {
                         return listener_.reject(in, "not a hello");
                       }
                       in.admit();
                       ++admittedCount_;
                       asio::async_write(in.socket(), asio::buffer("ok", 2),
                                         [](const boost::system::error_code&, size_t) {});
                     });
  }

  asio::io_context io_;
  Listener listener_;
  uint16_t port_ = 0;
  std::vector<std::shared_ptr<Incoming>> accepted_;  // I/O thread only
  std::atomic<int> maxPending_{0};
  std::atomic<int> admittedCount_{0};
  std::thread thread_;
};

ListenerOptions options(Ms handshake, int maxPending = 32) {
  return {.name = "test", .handshake = handshake, .maxPending = maxPending};
}

TEST(Listener, SilentConnectionClosedAtTheDeadline) {
  HelloServer server(options(Ms(300)));
  RawSocket silent(server.port());
  ASSERT_TRUE(silent.connected());
  auto start = Clock::now();
  EXPECT_TRUE(silent.closedWithin(3000));
  EXPECT_GE(msSince(start), 250);
}

TEST(Listener, TricklingBytesDoNotExtendTheDeadline) {
  HelloServer server(options(Ms(400)));
  RawSocket loris(server.port());
  ASSERT_TRUE(loris.connected());
  auto start = Clock::now();
  bool closed = false;
  // "hel", one byte every 100 ms, then nothing: never a whole hello.
  for (char c : std::string("hel")) {
    sendText(loris, std::string(1, c));
    if ((closed = loris.closedWithin(100))) break;
  }
  closed = closed || loris.closedWithin(3000);
  EXPECT_TRUE(closed);
  EXPECT_GE(msSince(start), 350);
}

TEST(Listener, AdmittedConnectionOutlivesTheDeadline) {
  HelloServer server(options(Ms(200)));
  RawSocket peer(server.port());
  ASSERT_TRUE(sendText(peer, "hello"));
  EXPECT_EQ(receiveText(peer, 2, 3000), "ok");
  EXPECT_FALSE(peer.closedWithin(600));
  EXPECT_EQ(server.admitted(), 1);
}

TEST(Listener, NotAfterCapsTheDeadline) {
  ListenerOptions o = options(Ms(60000));
  o.notAfter = Clock::now() + Ms(300);
  HelloServer server(o);
  RawSocket silent(server.port());
  EXPECT_TRUE(silent.closedWithin(3000));
}

TEST(Listener, JunkIsClosedAndRealPeersServed) {
  HelloServer server(options(Ms(5000)));
  RawSocket http(server.port());
  RawSocket eof(server.port());
  ASSERT_TRUE(sendText(http, "GET / HTTP/1.1\r\n\r\n"));
  ASSERT_TRUE(sendText(eof, "he"));
  eof.shutdownWrite();
  RawSocket peer(server.port());
  ASSERT_TRUE(sendText(peer, "hello"));
  EXPECT_EQ(receiveText(peer, 2, 3000), "ok");
  // Rejected at once, long before their deadline.
  EXPECT_TRUE(http.closedWithin(1000));
  EXPECT_TRUE(eof.closedWithin(1000));
  EXPECT_EQ(server.admitted(), 1);
}

TEST(Listener, FloodOfSilentConnectionsOnlyDelays) {
  HelloServer server(options(Ms(400), /*maxPending=*/2));
  std::vector<std::unique_ptr<RawSocket>> silent;
  for (int i = 0; i < 4; ++i) silent.push_back(std::make_unique<RawSocket>(server.port()));
  std::this_thread::sleep_for(Ms(50));  // the silent ones are accepted first
  auto start = Clock::now();
  RawSocket peer(server.port());
  ASSERT_TRUE(sendText(peer, "hello"));
  // Two batches of silent connections time out before the peer's handshake is read.
  EXPECT_EQ(receiveText(peer, 2, 5000), "ok");
  EXPECT_GE(msSince(start), 600);
  EXPECT_LE(server.maxPendingSeen(), 2);
  for (auto& s : silent) EXPECT_TRUE(s->closedWithin(3000));
}

}  // namespace
}  // namespace trnccl::transport::net
