// The TCP transport with ranks as threads of one process: ring exchanges of odd and large
// sizes over one and several sockets per peer, IPv6, bounded staging, and descriptor and
// thread hygiene.
#include <gtest/gtest.h>

#include <tuple>

#include "transports/tcp/tcp_connection.h"
#include "unit/tcp/tcp_test_util.h"

namespace trnccl::transport::tcp::test {
namespace {

constexpr size_t kBuffer = 256 << 10;  // small staging, so large messages wrap the rings often

// One exchange step of rank r with its linked peers.
Status ringStep(Cluster& cluster, int r, size_t step, size_t bytes, const Links& links) {
  return exchangeStep(cluster.bell(r), r, step, bytes, links);
}

class TcpRing : public ::testing::TestWithParam<std::tuple<int, int>> {};

// Each rank sends to its next and previous rank at once (with two ranks, both directions of
// one connection), every size in turn. 0-byte messages are never posted (tcp_connection.h).
TEST_P(TcpRing, ExchangesOddAndLargeSizesBothWays) {
  auto [n, nsocks] = GetParam();
  EnvGuard sockets("TRNCCL_SOCKET_NSOCKS", std::to_string(nsocks));
  EnvGuard buffer("TRNCCL_TCP_BUFFER_BYTES", std::to_string(kBuffer));
  Cluster cluster(n);
  ASSERT_TRUE(cluster.connect([n](int r) { return ringPeers(r, n); }).isOk())
      << cluster.statuses[0].message();
  auto* first = dynamic_cast<TcpConnection*>(cluster.conn(0, 0));
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->sockets(), static_cast<size_t>(nsocks));
  EXPECT_EQ(first->bufferBytes(), kBuffer);
  const std::vector<size_t> sizes = {1, 7, 4096 + 3, first->bufferBytes() * 3 + 5, (8 << 20) + 3};

  Status status = cluster.runEach([&](int r) -> Status {
    for (size_t step = 0; step < sizes.size(); ++step) {
      TRN_TRY(ringStep(cluster, r, step, sizes[step], cluster.links(r)));
    }
    return Status::ok();
  });
  EXPECT_TRUE(status.isOk()) << status.message();
}

INSTANTIATE_TEST_SUITE_P(
    Ranks, TcpRing, ::testing::Combine(::testing::Values(2, 3, 4, 5, 8), ::testing::Values(1, 4)),
    [](const auto& info) {
      return fmt::format("{}ranks_{}sockets", std::get<0>(info.param), std::get<1>(info.param));
    });

// Many messages back to back, both ways, sizes straddling chunk and ring boundaries: the
// receiver must find each chunk's header on the right socket every time.
TEST(TcpStriping, ManyMessagesAcrossFourSockets) {
  EnvGuard sockets("TRNCCL_SOCKET_NSOCKS", "4");
  EnvGuard buffer("TRNCCL_TCP_BUFFER_BYTES", std::to_string(kBuffer));
  Cluster cluster(2);
  ASSERT_TRUE(cluster.connectAll().isOk()) << cluster.statuses[0].message();
  const std::vector<size_t> sizes = {kChunkBytes - 1,
                                     kChunkBytes,
                                     kChunkBytes + 1,
                                     3 * kChunkBytes + 17,
                                     4 * kChunkBytes,
                                     9 * kChunkBytes - 3,
                                     1,
                                     33,
                                     5 * kChunkBytes + kChunkBytes / 2};
  Status status = cluster.runEach([&](int r) -> Status {
    Links links = cluster.links(r);
    for (size_t round = 0; round < 3; ++round) {
      for (size_t i = 0; i < sizes.size(); ++i) {
        TRN_TRY(ringStep(cluster, r, round * sizes.size() + i, sizes[i], links));
      }
    }
    return Status::ok();
  });
  EXPECT_TRUE(status.isOk()) << status.message();
}

TEST(TcpSetup, RankWithoutPeersTakesPart) {
  Cluster cluster(3);
  Status status =
      cluster.connect([](int r) { return r == 1 ? std::vector<int>{} : std::vector<int>{2 - r}; });
  ASSERT_TRUE(status.isOk()) << status.message();
  EXPECT_TRUE(cluster.connections[1].empty());
  status = cluster.runEach([&](int r) -> Status {
    if (r == 1) return Status::ok();
    return ringStep(cluster, r, 0, 1000, cluster.links(r));
  });
  EXPECT_TRUE(status.isOk()) << status.message();
}

TEST(TcpSetup, Ipv6Loopback) {
  EnvGuard family("TRNCCL_SOCKET_FAMILY", "AF_INET6");
  Cluster cluster(3);
  ASSERT_TRUE(cluster.connectAll().isOk()) << cluster.statuses[0].message();
  Status status = cluster.runEach(
      [&](int r) -> Status { return ringStep(cluster, r, 0, (1 << 20) + 1, cluster.links(r)); });
  EXPECT_TRUE(status.isOk()) << status.message();
}

TEST(TcpSetup, RejectsABadSocketCount) {
  EnvGuard sockets("TRNCCL_SOCKET_NSOCKS", "17");
  Cluster cluster(2);
  Status status = cluster.connectAll();
  ASSERT_FALSE(status.isOk());
  EXPECT_EQ(cluster.statuses[0].code(), Code::kInvalidArgument) << cluster.statuses[0].message();
  EXPECT_NE(cluster.statuses[0].message().find("TRNCCL_SOCKET_NSOCKS=17"), std::string::npos);
}

// TRNCCL_SOCKET_BUFSIZE outside [0, 1 GiB] fails the setup naming the setting; a small valid
// size (64 KiB buffers, a 300 kB message) still carries the data.
TEST(TcpSetup, SocketBufferSizeIsChecked) {
  {
    EnvGuard size("TRNCCL_SOCKET_BUFSIZE", "-1");
    Cluster cluster(2);
    ASSERT_FALSE(cluster.connectAll().isOk());
    EXPECT_EQ(cluster.statuses[0].code(), Code::kInvalidArgument) << cluster.statuses[0].message();
    EXPECT_NE(cluster.statuses[0].message().find("TRNCCL_SOCKET_BUFSIZE=-1"), std::string::npos)
        << cluster.statuses[0].message();
  }
  EnvGuard size("TRNCCL_SOCKET_BUFSIZE", "65536");
  Cluster cluster(2);
  ASSERT_TRUE(cluster.connectAll().isOk()) << cluster.statuses[0].message();
  Status status = cluster.runEach(
      [&](int r) { return exchangeStep(cluster.bell(r), r, 0, 300000, cluster.links(r)); });
  EXPECT_TRUE(status.isOk()) << status.message();
}

// A sender may hand over half its buffer while the receiver does nothing at all.
TEST(TcpStaging, SenderNeedsNoReceiverForHalfTheBuffer) {
  EnvGuard buffer("TRNCCL_TCP_BUFFER_BYTES", std::to_string(kBuffer));
  Cluster cluster(2);
  ASSERT_TRUE(cluster.connectAll().isOk());
  Connection* sender = cluster.conn(0, 0);
  std::vector<std::byte> out(sender->bufferBytes() / 2);
  fillPattern(out, 1);
  ASSERT_TRUE(sender->beginSend(5, out.size()).isOk());
  Result<size_t> taken = offer(*sender, out.data(), out.size());
  ASSERT_TRUE(taken.isOk()) << taken.status().message();
  EXPECT_EQ(*taken, out.size());
  std::vector<std::byte> in(out.size());
  std::vector<SendOp> sends{{sender, out.data(), out.size(), out.size()}};
  std::vector<RecvOp> recvs{{cluster.conn(1, 0), in.data(), in.size()}};
  ASSERT_TRUE(cluster.conn(1, 0)->beginRecv(5, in.size()).isOk());
  ASSERT_TRUE(drive(cluster.bell(1), sends, recvs).isOk());
  EXPECT_EQ(in, out);
}

// Everything the transport opened is closed and its I/O thread gone once it and its
// connections are destroyed.
TEST(TcpHygiene, DescriptorsAndThreadsBackToBaseline) {
  auto exercise = [] {
    EnvGuard sockets("TRNCCL_SOCKET_NSOCKS", "2");
    Cluster cluster(4);
    ASSERT_TRUE(cluster.connectAll().isOk()) << cluster.statuses[0].message();
    Status status = cluster.runEach(
        [&](int r) -> Status { return ringStep(cluster, r, 0, 300000, cluster.links(r)); });
    EXPECT_TRUE(status.isOk()) << status.message();
  };
  exercise();  // first use may open process-wide descriptors of libraries
  size_t fds = countEntries("/proc/self/fd");
  size_t threads = countEntries("/proc/self/task");
  for (int i = 0; i < 3; ++i) exercise();
  EXPECT_EQ(countEntries("/proc/self/fd"), fds);
  EXPECT_EQ(countEntries("/proc/self/task"), threads);
}

// Connections may outlive their transport (the I/O thread is shared), and the reverse.
TEST(TcpHygiene, TransportAndConnectionsDieInEitherOrder) {
  Cluster cluster(2);
  ASSERT_TRUE(cluster.connectAll().isOk());
  cluster.ranks[0]->transport.reset();
  Status status = cluster.runEach(
      [&](int r) -> Status { return ringStep(cluster, r, 0, 70000, cluster.links(r)); });
  EXPECT_TRUE(status.isOk()) << status.message();
}

}  // namespace
}  // namespace trnccl::transport::tcp::test
