// The ofi transport's own liveness (transports/core/liveness.h, heartbeat.h, endpoint.h), once
// per libfabric provider: a peer that goes silent fails the channel with kTimeout after
// TRNCCL_LIVENESS_TIMEOUT_MS, an idle channel lives on heartbeats alone, heartbeats do not
// wait for the data path, and a peer that closed in order is not a failed link.
#include <gtest/gtest.h>

#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

#include "transports/ofi/heartbeat.h"
#include "transports/ofi/ofi_connection.h"
#include "transports/ofi/testing.h"
#include "unit/ofi/ofi_test_util.h"

namespace trnccl::transport::ofi::test {
namespace {

using OfiLiveness = PerProvider;

// Holds a rank's endpoint lock, and with `heartbeats` its heartbeats' lock too, for `hold`:
// its data path stops; with `heartbeats` it neither sends nor reads anything at all.
std::thread stall(OfiConnection& rank, std::chrono::milliseconds hold, bool heartbeats) {
  return std::thread([&rank, hold, heartbeats] {
    std::lock_guard data(rank.endpoint().mutex());
    std::unique_lock beats(rank.endpoint().heartbeats()->mutex(), std::defer_lock);
    if (heartbeats) beats.lock();
    std::this_thread::sleep_for(hold);
  });
}

// T = 600 ms. Rank 0's locks are held for 2 s, so it neither sends heartbeats nor drives its
// provider: rank 1 fails after about T, naming rank 0 and the setting.
TEST_P(OfiLiveness, SilentPeerFailsAfterTheTimeout) {
  EnvGuard timeout("TRNCCL_LIVENESS_TIMEOUT_MS", "600");
  Cluster cluster(2);
  ASSERT_TRUE(cluster.connectAll().isOk()) << cluster.statuses[0].message();
  auto* silent = dynamic_cast<OfiConnection*>(cluster.conn(0, 0));
  ASSERT_NE(silent, nullptr);
  std::thread holder = stall(*silent, 2000ms, true);
  auto stalled = Clock::now();
  Status status = cluster.checkUntilError(1, cluster.conn(1, 0), 1700ms);
  auto elapsed = Clock::now() - stalled;
  holder.join();
  ASSERT_FALSE(status.isOk()) << "no liveness error within 1.7 s";
  EXPECT_EQ(status.code(), Code::kTimeout);
  EXPECT_EQ(status.peer(), 0);
  EXPECT_NE(status.message().find("ofi: heard nothing from rank 0 ("), std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find("(TRNCCL_LIVENESS_TIMEOUT_MS=600)"), std::string::npos)
      << status.message();
  EXPECT_GE(elapsed, 500ms);  // T less one heartbeat interval (75 ms) at the earliest
  EXPECT_LE(elapsed, 1600ms);
  Result<size_t> n = cluster.conn(1, 0)->recvSome(1, [](size_t, const std::byte*, size_t) {});
  EXPECT_EQ(n.status().code(), Code::kTimeout) << n.status().message();  // it sticks
}

// T = 600 ms. Rank 1 sends 8 MiB to rank 0, whose locks are held: the send stalls and
// rank 1's channel fails after about T. Closing then cancels every operation the provider still
// holds (the pre-posted receives, the sends rank 0 never took) and waits for their completions
// (at most 500 ms) before fi_close, on both ranks (closing rxm with operations in flight crashed
// in fi_close).
TEST_P(OfiLiveness, ClosesWithNothingInFlightAfterTheTimeout) {
  EnvGuard timeout("TRNCCL_LIVENESS_TIMEOUT_MS", "600");
  // Through the ring, whose room the stalled peer never frees (pieces read in place are not
  // bounded by it, and `data` goes before the cluster closes).
  EnvGuard copy("TRNCCL_OFI_ZCOPY_BYTES", "0");
  CounterDelta<testing::Event> delta;
  {
    Cluster cluster(2);
    ASSERT_TRUE(cluster.connectAll().isOk()) << cluster.statuses[0].message();
    auto* silent = dynamic_cast<OfiConnection*>(cluster.conn(0, 0));
    ASSERT_NE(silent, nullptr);
    Connection* sender = cluster.conn(1, 0);
    std::vector<std::byte> data(8 << 20);
    ASSERT_TRUE(sender->beginSend(1, data.size()).isOk());
    std::thread holder = stall(*silent, 2000ms, true);
    Status status;
    size_t sent = 0;
    for (auto until = Clock::now() + 1700ms; status.isOk() && Clock::now() < until;) {
      Result<size_t> took = sender->sendSome(data.data() + sent, data.size() - sent);
      status = took ? cluster.conn(1, 0)->checkPeer() : took.status();
      if (took) sent += *took;
      std::this_thread::sleep_for(1ms);
    }
    holder.join();
    ASSERT_EQ(status.code(), Code::kTimeout) << status.message();
    EXPECT_LT(sent, data.size()) << "the silent peer took the whole message";
  }
  // The receives at least are cancelled; rxm may keep sends toward the peer it could not reach
  // (docs/RELIABILITY.md): they are counted, and closing waited at most 500 ms for them.
  EXPECT_GT(delta.get(testing::Event::kReleasedAtClose), 0);
  std::printf("released %lld operations at close, %lld still held\n",
              static_cast<long long>(delta.get(testing::Event::kReleasedAtClose)),
              static_cast<long long>(delta.get(testing::Event::kHeldAtClose)));
}

// T = 300 ms. Nothing is sent for 5 T: heartbeats keep both ends alive, and the channel still
// carries messages afterwards.
TEST_P(OfiLiveness, IdleChannelLivesOnHeartbeats) {
  EnvGuard timeout("TRNCCL_LIVENESS_TIMEOUT_MS", "300");
  Cluster cluster(2);
  ASSERT_TRUE(cluster.connectAll().isOk()) << cluster.statuses[0].message();
  Status status = cluster.idleThenExchange(1500ms);
  EXPECT_TRUE(status.isOk()) << status.message();
}

// T = 600 ms. Rank 0's data path is stuck for 2 s (its endpoint lock held, as by a long call):
// its heartbeats, on their own endpoint and lock, still reach rank 1, which must not fail the
// link (a slow data stream is not a dead peer, F10). With the heartbeats on the data endpoint
// rank 1 failed here after T.
TEST_P(OfiLiveness, StuckDataPathKeepsHeartbeating) {
  EnvGuard timeout("TRNCCL_LIVENESS_TIMEOUT_MS", "600");
  Cluster cluster(2);
  ASSERT_TRUE(cluster.connectAll().isOk()) << cluster.statuses[0].message();
  auto* stuck = dynamic_cast<OfiConnection*>(cluster.conn(0, 0));
  ASSERT_NE(stuck, nullptr);
  std::thread holder = stall(*stuck, 2000ms, false);
  Status status = cluster.checkUntilError(1, cluster.conn(1, 0), 1900ms);
  holder.join();
  EXPECT_TRUE(status.isOk()) << status.message();
  EXPECT_TRUE(cluster.conn(1, 0)->checkLink().isOk());
}

// T = 600 ms. Rank 0 closes its connection (a communicator destroyed): its goodbye makes rank
// 1's check of all its links (checkLink) leave that link alone, for 3 T; a wait on rank 0
// (checkPeer) still fails once it heard nothing for T. Without the goodbye rank 1's next
// heartbeat meets a closed peer and checkLink failed.
TEST_P(OfiLiveness, OrderlyCloseIsNotAFailedLink) {
  EnvGuard timeout("TRNCCL_LIVENESS_TIMEOUT_MS", "600");
  Cluster cluster(2);
  ASSERT_TRUE(cluster.connectAll().isOk()) << cluster.statuses[0].message();
  cluster.connections[0].clear();  // rank 0's endpoint closes
  Connection* link = cluster.conn(1, 0);
  for (auto until = Clock::now() + 1800ms; Clock::now() < until;) {
    Status status = link->checkLink();
    ASSERT_TRUE(status.isOk()) << status.message();
    std::this_thread::sleep_for(20ms);
  }
  Status awaited = link->checkPeer();
  EXPECT_EQ(awaited.code(), Code::kTimeout) << awaited.message();
  EXPECT_NE(awaited.message().find("heard nothing from rank 0"), std::string::npos)
      << awaited.message();
}

// Over libfabric's tcp provider only: the shm provider stays on the host and has no heartbeats
// (ofi_transport.cc).
INSTANTIATE_TEST_SUITE_P(Providers, OfiLiveness, ::testing::Values("tcp", "net"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace trnccl::transport::ofi::test
