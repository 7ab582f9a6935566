// The setup helpers every transport shares (transports/core/setup.h): what a setup context
// must hold, and that one rank's failure reaches every rank, naming it.
#include "transports/core/setup.h"

#include <gtest/gtest.h>

#include <thread>

#include "support/transport/oob.h"

namespace trnccl::transport::test {
namespace {

// One rank's context for `nranks`, with a doorbell and an oob channel.
struct Context {
  Context(int rank, int nranks, OobChannel* oob) {
    ctx.rank = rank;
    ctx.nranks = nranks;
    ctx.oob = oob;
    ctx.bell = &bell;
    ctx.peers.resize(static_cast<size_t>(nranks));
  }
  Doorbell bell;
  SetupContext ctx;
};

TEST(CheckSetup, AcceptsOtherRanksOnce) {
  OobGroup group(4);
  ThreadOob oob(group, 1);
  Context c(1, 4, &oob);
  EXPECT_TRUE(checkSetup(c.ctx, std::vector<int>{0, 2, 3}, "xp").isOk());
  EXPECT_TRUE(checkSetup(c.ctx, std::vector<int>{}, "xp").isOk());
}

TEST(CheckSetup, RejectsSelfDuplicatesAndStrangers) {
  OobGroup group(4);
  ThreadOob oob(group, 1);
  Context c(1, 4, &oob);
  for (std::vector<int> peers : {std::vector<int>{1}, {0, 0}, {4}, {-1}}) {
    Status status = checkSetup(c.ctx, peers, "xp");
    EXPECT_EQ(status.code(), Code::kInvalidArgument) << status.message();
    EXPECT_EQ(status.message().rfind("xp: rank 1 cannot connect to rank ", 0), 0u)
        << status.message();
  }
}

TEST(CheckSetup, NeedsOobDoorbellAndEveryPeerInfo) {
  OobGroup group(2);
  ThreadOob oob(group, 0);
  Context c(0, 2, &oob);
  c.ctx.oob = nullptr;
  EXPECT_EQ(checkSetup(c.ctx, std::vector<int>{1}, "xp").message(),
            "xp: setup context without an oob channel");
  c.ctx.oob = &oob;
  c.ctx.bell = nullptr;
  EXPECT_EQ(checkSetup(c.ctx, std::vector<int>{1}, "xp").code(), Code::kInvalidArgument);
  c.ctx.bell = &c.bell;
  c.ctx.peers.pop_back();
  EXPECT_EQ(checkSetup(c.ctx, std::vector<int>{1}, "xp").message(),
            "xp: setup context without a doorbell or with 1 peers for 2 ranks");
}

TEST(FirstFailure, OwnErrorFirstThenTheFirstRankThatFailed) {
  Status own = internalError("mine");
  EXPECT_EQ(firstFailure(own, std::vector<int32_t>{1, 0, 0}, "xp", "open").message(), "mine");
  Status other = firstFailure(Status::ok(), std::vector<int32_t>{1, 0, 0}, "xp", "open it");
  EXPECT_EQ(other.code(), Code::kRemoteError);
  EXPECT_EQ(other.peer(), 1);
  EXPECT_EQ(other.message(), "xp: rank 1 failed to open it; see its error");
  EXPECT_TRUE(firstFailure(Status::ok(), std::vector<int32_t>{1, 1}, "xp", "open").isOk());
}

struct Record {
  int32_t ok = 0;
  int32_t value = 0;
};

// Every rank gets every record in rank order, and all learn that rank 2 failed.
TEST(Exchange, RecordsInRankOrderAndFailuresReachEveryRank) {
  constexpr int kRanks = 3;
  OobGroup group(kRanks);
  std::vector<Status> statuses(kRanks);
  std::vector<std::vector<Record>> seen(kRanks);
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      ThreadOob oob(group, r);
      Context c(r, kRanks, &oob);
      Result<std::vector<Record>> all = exchange(c.ctx, Record{1, 10 * r}, "xp");
      if (all) seen[static_cast<size_t>(r)] = *all;
      Status local = r == 2 ? internalError("rank 2 broke") : Status::ok();
      statuses[static_cast<size_t>(r)] = agree(c.ctx, local, "xp", "map");
    });
  }
  for (auto& thread : threads) thread.join();
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(seen[static_cast<size_t>(r)].size(), size_t{kRanks});
    for (int from = 0; from < kRanks; ++from) {
      EXPECT_EQ(seen[static_cast<size_t>(r)][static_cast<size_t>(from)].value, 10 * from);
    }
  }
  EXPECT_EQ(statuses[2].message(), "rank 2 broke");
  for (int r : {0, 1}) {
    EXPECT_EQ(statuses[static_cast<size_t>(r)].code(), Code::kRemoteError);
    EXPECT_EQ(statuses[static_cast<size_t>(r)].peer(), 2);
  }
}

// An oob channel that answers with the wrong number of bytes.
class ShortOob final : public OobChannel {
 public:
  Result<std::vector<std::byte>> allGather(std::span<const std::byte> mine) override {
    return std::vector<std::byte>(mine.begin(), mine.end());  // one rank's worth, not two
  }
  Status barrier() override { return Status::ok(); }
};

TEST(Exchange, WrongSizeFromTheOobIsAnInternalError) {
  ShortOob oob;
  Context c(0, 2, &oob);
  Result<std::vector<Record>> all = exchange(c.ctx, Record{}, "xp");
  ASSERT_FALSE(all.isOk());
  EXPECT_EQ(all.status().code(), Code::kInternalError);
  EXPECT_EQ(all.status().message(), "xp: oob allGather returned 8 bytes, expected 2 x 8");
}

}  // namespace
}  // namespace trnccl::transport::test
