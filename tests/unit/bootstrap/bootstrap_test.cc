// Bootstrap happy paths: check-in and table, allGather rounds, barrier, TRNCCL_COMM_ID.
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstring>
#include <mutex>

#include "unit/bootstrap/harness.h"

namespace trnccl::bootstrap::test {
namespace {

class BootstrapInit : public ::testing::TestWithParam<int> {};

TEST_P(BootstrapInit, EveryRankGetsTheTable) {
  const int n = GetParam();
  UniqueId id = newId();
  runThreads(allRanks(n), [&](int rank) {
    auto b = connectRank(id, rank, n);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->rank(), rank);
    EXPECT_EQ(b->nranks(), n);
    ASSERT_EQ(b->infos().size(), static_cast<size_t>(n));
    for (int r = 0; r < n; ++r) EXPECT_EQ(b->infos()[r], infoFor(r)) << "rank " << r;
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, BootstrapInit, ::testing::Values(1, 2, 4, 8, 16));

TEST(Bootstrap, AllGatherRoundsAndBarrier) {
  const int n = 4;
  const size_t sizes[] = {0, 1, 7, 1000, 70001, 8};
  UniqueId id = newId();
  runThreads(allRanks(n), [&](int rank) {
    auto b = connectRank(id, rank, n);
    ASSERT_NE(b, nullptr);
    for (size_t round = 0; round < std::size(sizes); ++round) {
      std::vector<std::byte> mine(sizes[round]);
      for (size_t i = 0; i < mine.size(); ++i) {
        mine[i] = static_cast<std::byte>(rank * 31 + round * 7 + i);
      }
      auto all = b->allGather(mine);
      ASSERT_TRUE(all.isOk()) << all.status().message();
      ASSERT_EQ(all->size(), sizes[round] * n);
      for (int r = 0; r < n; ++r) {
        for (size_t i = 0; i < sizes[round]; ++i) {
          ASSERT_EQ((*all)[r * sizes[round] + i], static_cast<std::byte>(r * 31 + round * 7 + i));
        }
      }
      Status s = b->barrier();
      ASSERT_TRUE(s.isOk()) << s.message();
    }
  });
}

TEST(Bootstrap, AllGatherSizeMismatchFailsEveryRank) {
  const int n = 3;
  UniqueId id = newId();
  runThreads(allRanks(n), [&](int rank) {
    auto b = connectRank(id, rank, n);
    ASSERT_NE(b, nullptr);
    std::vector<std::byte> mine(rank == 2 ? 16 : 8);
    auto all = b->allGather(mine);
    ASSERT_FALSE(all.isOk());
    EXPECT_EQ(all.status().code(), Code::kInvalidUsage) << all.status().message();
    EXPECT_NE(all.status().message().find("sizes differ"), std::string::npos)
        << all.status().message();
    // The first error sticks.
    EXPECT_FALSE(b->barrier().isOk());
  });
}

uint16_t freeLoopbackPort() {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor a(
      io, boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
  return a.local_endpoint().port();
}

TEST(Bootstrap, CommIdFromEnvironment) {
  const int n = 4;
  std::string commId = fmt::format("127.0.0.1:{}", freeLoopbackPort());
  setenv("TRNCCL_COMM_ID", commId.c_str(), 1);
  std::vector<UniqueId> ids(n);
  runThreads(allRanks(n), [&](int rank) {
    auto id = createUniqueId();
    ASSERT_TRUE(id.isOk()) << id.status().message();
    ids[rank] = *id;
  });
  unsetenv("TRNCCL_COMM_ID");
  for (int r = 0; r < n; ++r) {
    char a[128], b[128];
    ids[0].encode(a);
    ids[r].encode(b);
    EXPECT_EQ(std::memcmp(a, b, 128), 0) << "rank " << r;
    EXPECT_TRUE(ids[r].fromEnv);
  }
  // Ranks 1.. start before the root exists and retry until rank 0 starts it.
  runThreads(allRanks(n), [&](int rank) {
    if (rank == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      Status s = ensureRoot(ids[0]);
      ASSERT_TRUE(s.isOk()) << s.message();
      s = ensureRoot(ids[0]);  // idempotent
      ASSERT_TRUE(s.isOk()) << s.message();
    }
    auto b = connectRank(ids[rank], rank, n);
    ASSERT_NE(b, nullptr);
    EXPECT_TRUE(b->barrier().isOk());
  });
}

}  // namespace
}  // namespace trnccl::bootstrap::test
