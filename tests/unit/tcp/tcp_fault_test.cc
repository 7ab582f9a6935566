// The TCP transport when something is wrong: mismatched messages, peers that close or reset,
// junk at the listener, and setups that cannot complete.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "transports/tcp/setup.h"
#include "transports/tcp/testing.h"
#include "transports/tcp/wire.h"
#include "unit/tcp/tcp_test_util.h"

namespace trnccl::transport::tcp::test {
namespace {

constexpr size_t kBuffer = 256 << 10;

// Receives on `connection` until an error, the message, or the deadline.
Status receiveUntilError(Cluster& cluster, int rank, Connection* connection, size_t bytes,
                         std::chrono::milliseconds limit = 5000ms) {
  std::vector<std::byte> in(bytes);
  std::vector<SendOp> sends;
  std::vector<RecvOp> recvs{{connection, in.data(), in.size()}};
  return drive(cluster.bell(rank), sends, recvs, Deadline::after(limit));
}

// Stages a whole message (the peer's I/O thread drains it into its rings).
void stage(Connection* connection, uint64_t tag, const std::vector<std::byte>& out) {
  ASSERT_TRUE(connection->beginSend(tag, out.size()).isOk());
  Result<size_t> taken = offer(*connection, out.data(), out.size());
  ASSERT_TRUE(taken.isOk()) << taken.status().message();
  ASSERT_EQ(*taken, out.size());
}

TEST(TcpErrors, TagMismatchNamesPeerTagsAndSizes) {
  Cluster cluster(2);
  ASSERT_TRUE(cluster.connectAll().isOk());
  stage(cluster.conn(0, 0), 0x11, std::vector<std::byte>(4096));
  ASSERT_TRUE(cluster.conn(1, 0)->beginRecv(0x22, 8192).isOk());
  Status status = receiveUntilError(cluster, 1, cluster.conn(1, 0), 8192);
  ASSERT_FALSE(status.isOk());
  EXPECT_EQ(status.code(), Code::kInternalError);
  EXPECT_EQ(status.peer(), 0);
  EXPECT_TRUE(status.message().starts_with("tcp: from rank 0 (")) << status.message();
  EXPECT_TRUE(status.message().ends_with(
      "message has tag 0x11 and 4096 bytes, expected tag 0x22 and 8192 bytes"))
      << status.message();
}

TEST(TcpErrors, SizeMismatchIsCaughtBeforeAnyByteIsHandedOut) {
  Cluster cluster(2);
  ASSERT_TRUE(cluster.connectAll().isOk());
  stage(cluster.conn(0, 0), 0x11, std::vector<std::byte>(1 << 20));
  ASSERT_TRUE(cluster.conn(1, 0)->beginRecv(0x11, 100).isOk());
  size_t handed = 0;
  Status status = Status::ok();
  Deadline deadline = Deadline::after(5s);
  while (status.isOk() && !deadline.expired()) {
    Result<size_t> n = cluster.conn(1, 0)->recvSome(
        100, [&](size_t, const std::byte*, size_t bytes) { handed += bytes; });
    status = n.status();
  }
  EXPECT_EQ(handed, 0u);
  EXPECT_TRUE(status.message().ends_with(
      "message has tag 0x11 and 1048576 bytes, expected tag 0x11 and 100 bytes"))
      << status.message();
}

// The peer closes in the middle of a message: the receiver gets what was sent, then an error
// naming the peer, within milliseconds rather than at its timeout.
TEST(TcpErrors, PeerThatClosesIsReportedQuickly) {
  Cluster cluster(2);
  ASSERT_TRUE(cluster.connectAll().isOk());
  std::vector<std::byte> part(1000);
  ASSERT_TRUE(cluster.conn(0, 0)->beginSend(1, 1 << 20).isOk());
  ASSERT_EQ(cluster.conn(0, 0)->sendSome(part.data(), part.size()).value(), part.size());
  ASSERT_TRUE(cluster.conn(1, 0)->beginRecv(1, 1 << 20).isOk());
  std::this_thread::sleep_for(50ms);
  auto closed = Clock::now();
  cluster.connections[0].clear();
  cluster.ranks[0]->transport.reset();
  Status status = receiveUntilError(cluster, 1, cluster.conn(1, 0), 1 << 20);
  auto elapsed = Clock::now() - closed;
  ASSERT_FALSE(status.isOk());
  EXPECT_LT(elapsed, 1s);
  EXPECT_EQ(status.code(), Code::kRemoteError);
  EXPECT_EQ(status.peer(), 0);
  EXPECT_EQ(status.message().rfind("tcp: connection to rank 0 (127.0.0.1:", 0), 0u)
      << status.message();
  EXPECT_NE(status.message().find("closed: end of file, with 1047576 of 1048576 bytes"),
            std::string::npos)
      << status.message();
  Status peer = cluster.conn(1, 0)->checkPeer();
  EXPECT_EQ(peer.code(), Code::kRemoteError);
  EXPECT_EQ(peer.message(), status.message());
}

// A peer that closes with our bytes unread resets the connection: the sender learns it from
// sendSome/sendDone and checkPeer, quickly.
TEST(TcpErrors, PeerResetIsReportedQuickly) {
  EnvGuard buffer("TRNCCL_TCP_BUFFER_BYTES", std::to_string(kBuffer));
  Cluster cluster(2);
  ASSERT_TRUE(cluster.connectAll().isOk());
  Connection* sender = cluster.conn(1, 0);
  std::vector<std::byte> out(64 << 20);
  ASSERT_TRUE(sender->beginSend(9, out.size()).isOk());
  // Fill every buffer on the way: ours, both kernels', the peer's ring.
  size_t taken = 0;
  for (auto idle = Clock::now(); Clock::now() - idle < 300ms;) {
    Result<size_t> n = sender->sendSome(out.data() + taken, out.size() - taken);
    ASSERT_TRUE(n.isOk());
    if (*n > 0) idle = Clock::now();
    taken += *n;
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_LT(taken, out.size());
  auto closed = Clock::now();
  cluster.connections[0].clear();
  Status status = Status::ok();
  while (status.isOk() && Clock::now() - closed < 5s) {
    uint32_t seen = cluster.bell(1).snapshot();
    Result<size_t> n = sender->sendSome(out.data() + taken, out.size() - taken);
    status = n.status();
    if (n) taken += *n;
    if (status) status = sender->checkPeer();
    if (status) cluster.bell(1).sleep(seen, 5ms);
  }
  auto elapsed = Clock::now() - closed;
  ASSERT_FALSE(status.isOk());
  EXPECT_LT(elapsed, 1s);
  EXPECT_EQ(status.code(), Code::kRemoteError);
  EXPECT_EQ(status.peer(), 0);
  EXPECT_EQ(status.message().rfind("tcp: connection to rank 0 (127.0.0.1:", 0), 0u)
      << status.message();
  EXPECT_TRUE(status.message().find("closed: Connection reset by peer") != std::string::npos ||
              status.message().find("closed: Broken pipe") != std::string::npos)
      << status.message();
  EXPECT_FALSE(sender->checkPeer().isOk());
  EXPECT_FALSE(sender->sendDone().isOk());
}

// ---- junk at the listener ----

// A blocking client socket to 127.0.0.1:port that writes `bytes` (if any) and stays open.
int junkClient(uint16_t port, const void* bytes, size_t size) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
    ::close(fd);
    return -1;
  }
  if (size > 0 && ::send(fd, bytes, size, MSG_NOSIGNAL) != static_cast<ssize_t>(size)) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Before any rank learns the listeners' addresses, `attack` connects to each of them.
void attackListeners(Cluster& cluster, const std::function<void(uint16_t port)>& attack) {
  cluster.group.hook = [attack](uint64_t round, const std::vector<std::byte>& all) {
    if (round != 0) return;
    for (size_t at = 0; at + sizeof(ListenAddress) <= all.size(); at += sizeof(ListenAddress)) {
      ListenAddress address;
      std::memcpy(&address, all.data() + at, sizeof(address));
      if (address.family == 4) attack(address.port);
    }
  };
}

Status exchangeAll(Cluster& cluster) {
  return cluster.runEach([&](int r) -> Status {
    std::vector<std::byte> out(300000), in(out.size());
    fillPattern(out, static_cast<uint64_t>(r));
    std::vector<SendOp> sends;
    std::vector<RecvOp> recvs;
    for (size_t i = 0; i < cluster.connections[static_cast<size_t>(r)].size(); ++i) {
      TRN_TRY(cluster.conn(r, i)->beginSend(7, out.size()));
      TRN_TRY(cluster.conn(r, i)->beginRecv(7, in.size()));
      sends.push_back({cluster.conn(r, i), out.data(), out.size()});
    }
    std::vector<std::vector<std::byte>> ins(sends.size(), in);
    for (size_t i = 0; i < sends.size(); ++i) {
      recvs.push_back({cluster.conn(r, i), ins[i].data(), in.size()});
    }
    return drive(cluster.bell(r), sends, recvs);
  });
}

TEST(TcpListener, JunkConnectionsDoNotStopTheSetup) {
  EnvGuard sockets("TRNCCL_SOCKET_NSOCKS", "2");
  Cluster cluster(4);
  std::vector<int> junk;
  uint64_t hash = cluster.hash;
  attackListeners(cluster, [&junk, hash](uint16_t port) {
    const char http[] = "GET /metrics HTTP/1.1\r\nHost: trn\r\n\r\n";
    Handshake otherComm;
    otherComm.commHash = hash + 1;
    Handshake badRank;
    badRank.commHash = hash;
    badRank.rank = 3;  // never connects to anyone
    badRank.nsocks = 2;
    Handshake oldVersion;
    oldVersion.version = kProtocolVersion + 1;
    oldVersion.commHash = hash;
    for (auto [data, size] :
         std::vector<std::pair<const void*, size_t>>{{http, sizeof(http) - 1},
                                                     {&otherComm, sizeof(Handshake)},
                                                     {&badRank, sizeof(Handshake)},
                                                     {&oldVersion, sizeof(Handshake)},
                                                     {"hi", 2},
                                                     {nullptr, 0}}) {
      junk.push_back(junkClient(port, data, size));
    }
    ::shutdown(junk[junk.size() - 2], SHUT_WR);  // "hi", then end of file
  });
  CounterDelta<testing::Event> counted;
  auto start = Clock::now();
  Status status = cluster.connectAll();
  auto elapsed = Clock::now() - start;
  for (int fd : junk) EXPECT_GE(fd, 0);
  ASSERT_TRUE(status.isOk()) << status.message();
  EXPECT_LT(elapsed, kHandshakeTimeout);  // the silent connection held nothing up
  // Ranks 1..3 listen; each rejected the five talkative junk connections.
  EXPECT_EQ(counted.get(testing::Event::kRejectedHandshakes), 3 * 5);
  EXPECT_TRUE(exchangeAll(cluster).isOk());
  for (int fd : junk) ::close(fd);
}

// More silent connections than the listener reads at once: the real ones get through once
// the handshake timeout frees the slots.
TEST(TcpListener, FloodOfSilentConnectionsOnlyDelays) {
  Cluster cluster(2);
  std::vector<int> junk;
  attackListeners(cluster, [&junk](uint16_t port) {
    for (int i = 0; i < kMaxPendingHandshakes + 8; ++i) junk.push_back(junkClient(port, "", 0));
  });
  Status status = cluster.connectAll();
  ASSERT_TRUE(status.isOk()) << status.message();
  EXPECT_TRUE(exchangeAll(cluster).isOk());
  for (int fd : junk) ::close(fd);
}

// ---- setups that cannot complete ----

TEST(TcpSetup, AsymmetricPeersFailOnEveryRank) {
  Cluster cluster(2);
  Status status =
      cluster.connect([](int r) { return r == 0 ? std::vector<int>{1} : std::vector<int>{}; });
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(cluster.statuses[0].message().find("rank 1 does not listen for rank 0"),
            std::string::npos)
      << cluster.statuses[0].message();
  EXPECT_EQ(cluster.statuses[1].message(),
            "tcp: rank 0 failed to connect its tcp peers; see its error");
}

TEST(TcpSetup, OtherCommunicatorIsRejectedUntilTheDeadline) {
  Cluster cluster(2);
  cluster.ranks[1]->ctx.commHash += 1;
  for (auto& rank : cluster.ranks) rank->ctx.deadline = Deadline::after(1s);
  ASSERT_FALSE(cluster.connectAll().isOk());
  EXPECT_NE(cluster.statuses[0].message().find("no handshake answer"), std::string::npos)
      << cluster.statuses[0].message();
  EXPECT_EQ(cluster.statuses[1].code(), Code::kTimeout) << cluster.statuses[1].message();
  // One data socket and the control socket (link.h).
  EXPECT_NE(cluster.statuses[1].message().find("missing sockets from rank 0 (0 of 2)"),
            std::string::npos)
      << cluster.statuses[1].message();
}

}  // namespace
}  // namespace trnccl::transport::tcp::test
