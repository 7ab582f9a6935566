// The ofi transport's own liveness (transports/core/liveness.h, endpoint.h, channel.h), once
// per libfabric provider: a peer that goes silent fails the channel with kTimeout after
// TRNCCL_LIVENESS_TIMEOUT_MS, and an idle channel lives on heartbeats alone.
#include <gtest/gtest.h>

#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

#include "transports/ofi/ofi_connection.h"
#include "transports/ofi/testing.h"
#include "unit/ofi/ofi_test_util.h"

namespace trnccl::transport::ofi::test {
namespace {

using OfiLiveness = PerProvider;

// T = 600 ms. Rank 0's endpoint lock is held for 2 s, so it neither sends heartbeats nor
// drives its provider: rank 1 fails after about T, naming rank 0 and the setting.
TEST_P(OfiLiveness, SilentPeerFailsAfterTheTimeout) {
  EnvGuard timeout("TRNCCL_LIVENESS_TIMEOUT_MS", "600");
  Cluster cluster(2);
  ASSERT_TRUE(cluster.connectAll().isOk()) << cluster.statuses[0].message();
  auto* silent = dynamic_cast<OfiConnection*>(cluster.conn(0, 0));
  ASSERT_NE(silent, nullptr);
  std::mutex& lock = silent->endpoint().mutex();
  std::thread holder([&] {
    std::lock_guard held(lock);
    std::this_thread::sleep_for(2000ms);
  });
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

// T = 600 ms. Rank 1 sends 8 MiB to rank 0, whose endpoint lock is held: the send stalls and
// rank 1's channel fails after about T. Closing then cancels every operation the provider still
// holds (the pre-posted receives, the sends rank 0 never took) and waits for their completions
// (at most 500 ms) before fi_close, on both ranks (closing rxm with operations in flight crashed
// in fi_close).
TEST_P(OfiLiveness, ClosesWithNothingInFlightAfterTheTimeout) {
  EnvGuard timeout("TRNCCL_LIVENESS_TIMEOUT_MS", "600");
  CounterDelta<testing::Event> delta;
  {
    Cluster cluster(2);
    ASSERT_TRUE(cluster.connectAll().isOk()) << cluster.statuses[0].message();
    auto* silent = dynamic_cast<OfiConnection*>(cluster.conn(0, 0));
    ASSERT_NE(silent, nullptr);
    Connection* sender = cluster.conn(1, 0);
    std::vector<std::byte> data(8 << 20);
    ASSERT_TRUE(sender->beginSend(1, data.size()).isOk());
    std::mutex& lock = silent->endpoint().mutex();
    std::thread holder([&] {
      std::lock_guard held(lock);
      std::this_thread::sleep_for(2000ms);
    });
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

// Over libfabric's tcp provider only: the shm provider stays on the host and has no heartbeats
// (ofi_transport.cc).
INSTANTIATE_TEST_SUITE_P(Providers, OfiLiveness, ::testing::Values("tcp"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace trnccl::transport::ofi::test
