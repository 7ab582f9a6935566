// The TCP transport's own liveness (transports/core/liveness.h, link.h): a peer that goes
// silent fails the link with kTimeout after TRNCCL_LIVENESS_TIMEOUT_MS, an idle link lives on
// heartbeats alone, and a peer that closes in order is not mistaken for a silent one.
#include <gtest/gtest.h>

#include <boost/asio/post.hpp>
#include <thread>

#include "transports/tcp/tcp_connection.h"
#include "unit/tcp/tcp_test_util.h"

namespace trnccl::transport::tcp::test {
namespace {

// Blocks the I/O thread of `connection` for `duration`: its rank neither reads nor writes a
// socket meanwhile, as if stopped, while the test thread stays free.
void stallIoThread(Connection* connection, std::chrono::milliseconds duration) {
  auto* tcp = dynamic_cast<TcpConnection*>(connection);
  ASSERT_NE(tcp, nullptr);
  boost::asio::post(tcp->ioThread().context(),
                    [duration] { std::this_thread::sleep_for(duration); });
}

// T = 600 ms, heartbeats every 75 ms. The peer's I/O thread stops for 2 s; the receiver
// waiting on it fails after about T, naming the peer and the setting.
TEST(TcpLiveness, SilentPeerFailsAfterTheTimeout) {
  EnvGuard timeout("TRNCCL_LIVENESS_TIMEOUT_MS", "600");
  Cluster cluster(2);
  ASSERT_TRUE(cluster.connectAll().isOk()) << cluster.statuses[0].message();
  Connection* receiver = cluster.conn(1, 0);
  ASSERT_TRUE(receiver->beginRecv(5, 4096).isOk());
  stallIoThread(cluster.conn(0, 0), 2000ms);
  auto stalled = Clock::now();
  Status status = cluster.checkUntilError(1, receiver, 1700ms);
  auto elapsed = Clock::now() - stalled;
  ASSERT_FALSE(status.isOk()) << "no liveness error within 1.7 s";
  EXPECT_EQ(status.code(), Code::kTimeout);
  EXPECT_EQ(status.peer(), 0);
  EXPECT_NE(status.message().find("tcp: heard nothing from rank 0 (127.0.0.1:"), std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find("(TRNCCL_LIVENESS_TIMEOUT_MS=600)"), std::string::npos)
      << status.message();
  // Not before T less one heartbeat interval (the last heartbeat may predate the stall).
  EXPECT_GE(elapsed, 500ms);
  EXPECT_LE(elapsed, 1600ms);
  // The failure sticks: a receive reports it too, not a hang.
  Result<size_t> n = receiver->recvSome(4096, [](size_t, const std::byte*, size_t) {});
  EXPECT_EQ(n.status().code(), Code::kTimeout) << n.status().message();
}

// T = 300 ms. Nothing is sent for 5 T: the heartbeats keep both ends alive, and the link
// still carries a message afterwards.
TEST(TcpLiveness, IdleLinkLivesOnHeartbeats) {
  EnvGuard timeout("TRNCCL_LIVENESS_TIMEOUT_MS", "300");
  Cluster cluster(2);
  ASSERT_TRUE(cluster.connectAll().isOk()) << cluster.statuses[0].message();
  Status status = cluster.idleThenExchange(1500ms);
  EXPECT_TRUE(status.isOk()) << status.message();
}

// A peer that destroys its connections closes the control socket: the survivor stops
// expecting heartbeats instead of failing the link T later.
TEST(TcpLiveness, OrderlyCloseIsNotSilence) {
  EnvGuard timeout("TRNCCL_LIVENESS_TIMEOUT_MS", "300");
  Cluster cluster(2);
  ASSERT_TRUE(cluster.connectAll().isOk()) << cluster.statuses[0].message();
  cluster.connections[0].clear();
  Status status = cluster.checkUntilError(1, cluster.conn(1, 0), 1200ms);
  EXPECT_TRUE(status.isOk()) << status.message();
}

// T = 0 turns the check off: a peer silent for a while is no error.
TEST(TcpLiveness, ZeroTimeoutChecksNothing) {
  EnvGuard timeout("TRNCCL_LIVENESS_TIMEOUT_MS", "0");
  Cluster cluster(2);
  ASSERT_TRUE(cluster.connectAll().isOk()) << cluster.statuses[0].message();
  stallIoThread(cluster.conn(0, 0), 800ms);
  Status status = cluster.checkUntilError(1, cluster.conn(1, 0), 600ms);
  EXPECT_TRUE(status.isOk()) << status.message();
}

}  // namespace
}  // namespace trnccl::transport::tcp::test
