// Bootstrap under faults: bad check-ins, hostile connections to the root, missing and dying
// ranks, timeouts and abort().
#include <atomic>
#include <cstring>

#include "bootstrap/bootstrap_wire.h"
#include "unit/bootstrap/harness.h"

namespace trnccl::bootstrap::test {
namespace {

using std::chrono::milliseconds;
using Ms = std::chrono::milliseconds;

long long msSince(Clock::time_point start) {
  return std::chrono::duration_cast<Ms>(Clock::now() - start).count();
}

// Sends a hand-made hello and returns the root's reply frame (header + text).
std::pair<wire::Header, std::string> rawHello(const UniqueId& id, int rank, int nranks) {
  RawSocket s(id.port);
  EXPECT_TRUE(s.connected());
  wire::HeaderBytes hello = wire::encode(
      {.type = wire::Type::kHello, .idMagic = id.magic, .rank = rank, .arg = nranks, .length = 0});
  EXPECT_TRUE(s.sendAll(hello.data(), hello.size()));
  wire::HeaderBytes reply{};
  EXPECT_EQ(s.recvSome(reply.data(), reply.size(), 5000), static_cast<ssize_t>(reply.size()));
  wire::Header h = wire::decode(reply);
  std::string text(std::min<uint64_t>(h.length, 4096), '\0');
  s.recvSome(text.data(), text.size(), 5000);
  EXPECT_TRUE(s.closedWithin(5000)) << "the root should close a rejected connection";
  return {h, text};
}

TEST(BootstrapFaults, RankOutOfRangeRejectedWhileRealRanksComplete) {
  const int n = 4;
  UniqueId id = newId();
  // Checked locally before any connection.
  auto local = Bootstrap::connect(id, 4, n, {}, Deadline::after(Ms(1000)));
  ASSERT_FALSE(local.isOk());
  EXPECT_EQ(local.status().code(), Code::kInvalidArgument);

  // Ranks 0..2 check in, then the bad hellos arrive, then rank 3 completes the set.
  std::atomic<bool> badHellosDone{false};
  runThreads(allRanks(n + 1), [&](int rank) {
    if (rank == n) {
      std::this_thread::sleep_for(Ms(300));
      auto [h, text] = rawHello(id, /*rank=*/7, n);
      EXPECT_EQ(h.type, wire::Type::kError);
      EXPECT_EQ(h.arg, static_cast<int32_t>(Code::kInvalidArgument));
      EXPECT_NE(text.find("rank 7 out of range [0, 4)"), std::string::npos) << text;
      auto [h2, text2] = rawHello(id, 3, n + 3);
      EXPECT_EQ(h2.type, wire::Type::kError);
      EXPECT_NE(text2.find("says nranks 7, ranks already checked in say 4"), std::string::npos)
          << text2;
      badHellosDone = true;
      return;
    }
    while (rank == n - 1 && !badHellosDone) std::this_thread::sleep_for(Ms(10));
    auto b = connectRank(id, rank, n);
    ASSERT_NE(b, nullptr);
    EXPECT_TRUE(b->barrier().isOk());
  });
}

TEST(BootstrapFaults, DuplicateRankRejectedWhileRealRanksComplete) {
  const int n = 4;
  UniqueId id = newId();
  runThreads(allRanks(n), [&](int rank) {
    if (rank >= 2) {
      // Ranks 0 and 1 check in first; then an impostor claims rank 1.
      std::this_thread::sleep_for(Ms(300));
      if (rank == 2) {
        auto dup = Bootstrap::connect(id, 1, n, infoFor(1), Deadline::after(Ms(3000)));
        ASSERT_FALSE(dup.isOk());
        EXPECT_EQ(dup.status().code(), Code::kInvalidUsage) << dup.status().message();
        EXPECT_NE(dup.status().message().find("rank 1 already checked in"), std::string::npos)
            << dup.status().message();
      }
    }
    auto b = connectRank(id, rank, n);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->infos()[1], infoFor(1));
    EXPECT_TRUE(b->barrier().isOk());
  });
}

TEST(BootstrapFaults, HostileConnectionsDoNotStopTheRoot) {
  const int n = 4;
  UniqueId id = newId();
  RawSocket idle(id.port);
  RawSocket garbage(id.port);
  RawSocket http(id.port);
  RawSocket hugeBlob(id.port);
  ASSERT_TRUE(idle.connected() && garbage.connected() && http.connected());
  std::vector<char> junk(1000);
  for (size_t i = 0; i < junk.size(); ++i) junk[i] = static_cast<char>(i * 131 + 7);
  garbage.sendAll(junk.data(), junk.size());
  const char get[] = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  http.sendAll(get, sizeof(get) - 1);
  wire::HeaderBytes big = wire::encode(
      {.type = wire::Type::kHello, .idMagic = id.magic, .rank = 0, .arg = n, .length = 1ull << 40});
  hugeBlob.sendAll(big.data(), big.size());

  runThreads(allRanks(n), [&](int rank) {
    auto b = connectRank(id, rank, n, Ms(5000));
    ASSERT_NE(b, nullptr);
    EXPECT_TRUE(b->barrier().isOk());
  });
  EXPECT_TRUE(garbage.closedWithin(2000));
  EXPECT_TRUE(http.closedWithin(2000));
  EXPECT_TRUE(hugeBlob.closedWithin(2000));
  EXPECT_TRUE(idle.closedWithin(2000));
}

TEST(BootstrapFaults, IdleConnectionClosedAtHandshakeDeadline) {
  setenv("TRNCCL_BOOTSTRAP_HANDSHAKE_MS", "300", 1);
  UniqueId id = newId();
  unsetenv("TRNCCL_BOOTSTRAP_HANDSHAKE_MS");
  RawSocket idle(id.port);
  ASSERT_TRUE(idle.connected());
  auto start = Clock::now();
  EXPECT_TRUE(idle.closedWithin(3000)) << "the handshake deadline should close idle peers";
  EXPECT_GE(msSince(start), 250);
  // The root still serves real ranks afterwards.
  runThreads(allRanks(2), [&](int rank) { EXPECT_NE(connectRank(id, rank, 2), nullptr); });
}

TEST(BootstrapFaults, MissingRankTimesOut) {
  const int n = 4;
  UniqueId id = newId();
  runThreads({0, 1, 2}, [&](int rank) {
    auto start = Clock::now();
    auto b = Bootstrap::connect(id, rank, n, infoFor(rank), Deadline::after(Ms(500)));
    ASSERT_FALSE(b.isOk());
    EXPECT_EQ(b.status().code(), Code::kTimeout) << b.status().message();
    EXPECT_NE(b.status().message().find("timed out after"), std::string::npos);
    EXPECT_LT(msSince(start), 1500);
  });
}

TEST(BootstrapFaults, ConnectWithoutRootTimesOut) {
  UniqueId id{.magic = 1, .host = "127.0.0.1", .port = 1};  // nothing listens on port 1
  auto start = Clock::now();
  auto b = Bootstrap::connect(id, 0, 2, {}, Deadline::after(Ms(300)));
  ASSERT_FALSE(b.isOk());
  EXPECT_EQ(b.status().code(), Code::kTimeout) << b.status().message();
  EXPECT_LT(msSince(start), 1300);
}

TEST(BootstrapFaults, DisconnectedRankFailsOthersFast) {
  const int n = 4;
  UniqueId id = newId();
  runThreads(allRanks(n), [&](int rank) {
    auto b = connectRank(id, rank, n);
    ASSERT_NE(b, nullptr);
    ASSERT_TRUE(b->barrier().isOk());
    if (rank == 2) {
      b->abort();  // no goodbye: to the root this rank just vanished
      b.reset();
      return;
    }
    auto start = Clock::now();
    std::vector<std::byte> mine(8);
    auto all = b->allGather(mine);
    ASSERT_FALSE(all.isOk());
    EXPECT_EQ(all.status().code(), Code::kRemoteError) << all.status().message();
    EXPECT_NE(all.status().message().find("rank 2 disconnected"), std::string::npos)
        << all.status().message();
    EXPECT_EQ(all.status().peer(), 2);
    EXPECT_LT(msSince(start), 1000);
  });
}

TEST(BootstrapFaults, AllGatherTimesOut) {
  const int n = 2;
  UniqueId id = newId();
  runThreads(allRanks(n), [&](int rank) {
    auto b = connectRank(id, rank, n);
    ASSERT_NE(b, nullptr);
    if (rank == 1) {
      std::this_thread::sleep_for(Ms(800));  // never joins the allGather
      return;
    }
    b->setTimeout(Ms(300));
    auto start = Clock::now();
    auto all = b->allGather(std::vector<std::byte>(4));
    ASSERT_FALSE(all.isOk());
    EXPECT_EQ(all.status().code(), Code::kTimeout) << all.status().message();
    EXPECT_GE(msSince(start), 250);
    EXPECT_LT(msSince(start), 800);
  });
}

TEST(BootstrapFaults, AbortUnblocksAllGather) {
  const int n = 2;
  UniqueId id = newId();
  runThreads(allRanks(n), [&](int rank) {
    auto b = connectRank(id, rank, n);
    ASSERT_NE(b, nullptr);
    if (rank == 1) return;  // never joins the allGather
    std::atomic<bool> aborted{false};
    std::thread aborter([&] {
      std::this_thread::sleep_for(Ms(200));
      b->abort();
      aborted = true;
    });
    auto start = Clock::now();
    auto all = b->allGather(std::vector<std::byte>(4));
    auto took = msSince(start);
    aborter.join();
    ASSERT_FALSE(all.isOk());
    EXPECT_TRUE(aborted.load());
    EXPECT_LT(took, 1200);
    EXPECT_FALSE(b->barrier().isOk()) << "calls after abort() fail";
  });
}

}  // namespace
}  // namespace trnccl::bootstrap::test
