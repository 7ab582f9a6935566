// trncclCommInitRankScalable over N ranks in one process: each of the nId ids comes from its own
// trncclGetUniqueId (each starts a root here), every rank passes them all, and the communicator
// must then work: an all-reduce right on every rank (its transport setup ran allGathers across
// the groups), and a split of it (two more allGathers through the tiers); and a failure in one
// group must reach every group.
#include <gtest/gtest.h>

#include <barrier>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "api/handle.h"
#include "support/api_cases.h"
#include "support/ranks.h"

namespace trnccl::testing {
namespace {

std::string lastError() { return trncclGetLastError(nullptr); }

std::vector<trncclUniqueId> freshIds(int nId) {
  std::vector<trncclUniqueId> ids(nId);
  for (auto& id : ids) EXPECT_EQ(trncclGetUniqueId(&id), trncclSuccess) << lastError();
  return ids;
}

// Sum of ranks over comm (count elements), checked; and over a split into even and odd ranks.
size_t checkWorks(trncclComm_t comm, int r, int n) {
  trnrtStream_t stream;
  EXPECT_EQ(trnrtStreamCreate(&stream), trnrtSuccess);
  size_t bad = runRegisteredAllReduce(comm, stream, r, n, trncclFloat32, 1001, false, false);
  trncclComm_t half = nullptr;
  EXPECT_EQ(trncclCommSplit(comm, r % 2, r, &half, nullptr), trncclSuccess) << lastError();
  if (half != nullptr) {
    int size = 0;
    EXPECT_EQ(trncclCommCount(half, &size), trncclSuccess);
    EXPECT_EQ(size, (n + 1 - r % 2) / 2);
    bad += runRegisteredAllReduce(half, stream, r / 2, size, trncclInt32, 33, true, false);
    EXPECT_EQ(trncclCommDestroy(half), trncclSuccess);
  }
  EXPECT_EQ(trnrtStreamDestroy(stream), trnrtSuccess);
  return bad;
}

TEST(InitScalable, SeveralRootsMakeAWorkingCommunicator) {
  for (int n : {2, 5}) {
    for (int nId : {1, 2, 3, n}) {
      if (nId > n) continue;
      std::vector<trncclUniqueId> ids = freshIds(nId);
      std::vector<size_t> bad(n);
      runPerRank(n, [&](int r) {
        trncclComm_t comm = nullptr;
        ASSERT_EQ(trncclCommInitRankScalable(&comm, n, r, nId, ids.data(), nullptr), trncclSuccess)
            << lastError();
        int rank = -1;
        EXPECT_EQ(trncclCommUserRank(comm, &rank), trncclSuccess);
        EXPECT_EQ(rank, r);
        // Group g = r (nId-1) / n checked in at ids[g + 1]'s root; its first rank leads it.
        const int group = nId > 1 ? r * (nId - 1) / n : -1;
        const bool leads = nId > 1 && (r == 0 || (r - 1) * (nId - 1) / n != group);
        EXPECT_EQ(comm->impl->bootstrap().group(), group) << "rank " << r;
        EXPECT_EQ(comm->impl->bootstrap().leader(), leads) << "rank " << r;
        bad[r] = checkWorks(comm, r, n);
        EXPECT_EQ(trncclCommDestroy(comm), trncclSuccess);
      });
      for (int r = 0; r < n; ++r) EXPECT_EQ(bad[r], 0u) << "n " << n << " nId " << nId;
    }
  }
}

// A failure anywhere reaches every rank of every group: a revoke by a group's member and by a
// leader, and a rank that aborts (its connection to its group's root closes without a goodbye).
// Groups {0, 1}, {2, 3}, {4, 5}; the other ranks, idle, poll trncclCommGetAsyncError (which
// looks at their roots, and on a leader passes a failure on) and must see the failure within
// seconds, not at their next collective's timeout.
TEST(InitScalable, RevokeAndFailureReachEveryGroup) {
  const int n = 6, nId = 4;
  struct Case {
    int rank;
    bool abort;
    const char* says;
  };
  for (const Case& c :
       {Case{3, false, "rank 3 revoked the communicator"},
        Case{2, false, "rank 2 revoked the communicator"}, Case{5, true, "disconnected"}}) {
    std::vector<trncclUniqueId> ids = freshIds(nId);
    std::vector<trncclResult_t> seen(n, trncclSuccess);
    std::vector<double> seconds(n, 0);
    std::vector<std::string> messages(n);
    std::barrier ready(n);
    runPerRank(n, [&](int r) {
      trncclComm_t comm = nullptr;
      ASSERT_EQ(trncclCommInitRankScalable(&comm, n, r, nId, ids.data(), nullptr), trncclSuccess)
          << lastError();
      trnrtStream_t stream;
      EXPECT_EQ(trnrtStreamCreate(&stream), trnrtSuccess);
      EXPECT_EQ(runRegisteredAllReduce(comm, stream, r, n, trncclFloat32, 64, false, false), 0u);
      ready.arrive_and_wait();  // every rank is done with the all-reduce
      const auto start = std::chrono::steady_clock::now();
      if (r == c.rank) {
        if (c.abort) {
          EXPECT_EQ(trncclCommAbort(comm), trncclSuccess);
          comm = nullptr;
        } else {
          EXPECT_EQ(trncclCommRevoke(comm, TRNCCL_REVOKE_DEFAULT), trncclSuccess);
        }
      } else {
        while (seen[r] == trncclSuccess &&
               std::chrono::steady_clock::now() - start < std::chrono::seconds(15)) {
          ASSERT_EQ(trncclCommGetAsyncError(comm, &seen[r]), trncclSuccess);
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        seconds[r] =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        messages[r] = trncclGetLastError(comm);
      }
      // Nobody lets go of its communicator before every rank has looked: a rank that aborts
      // closes its connections, and the roots would report that instead.
      ready.arrive_and_wait();
      EXPECT_EQ(trnrtStreamDestroy(stream), trnrtSuccess);
      EXPECT_EQ(trncclCommAbort(comm), trncclSuccess);
    });
    for (int r = 0; r < n; ++r) {
      if (r == c.rank) continue;
      SCOPED_TRACE(::testing::Message() << "rank " << r << " after rank " << c.rank
                                        << (c.abort ? " aborted" : " revoked"));
      EXPECT_EQ(seen[r], trncclRemoteError) << messages[r];
      EXPECT_LT(seconds[r], 10.0);
      EXPECT_NE(messages[r].find(c.says), std::string::npos) << messages[r];
    }
  }
}

TEST(InitScalable, RefusesBadArgumentsWithAMessage) {
  std::vector<trncclUniqueId> ids = freshIds(1);
  trncclComm_t comm = nullptr;
  EXPECT_EQ(trncclCommInitRankScalable(&comm, 2, 0, 0, ids.data(), nullptr), trncclInvalidArgument);
  EXPECT_NE(lastError().find("nId 0 not in [1, nranks 2]"), std::string::npos) << lastError();
  EXPECT_EQ(trncclCommInitRankScalable(&comm, 2, 0, 3, ids.data(), nullptr), trncclInvalidArgument);
  EXPECT_EQ(trncclCommInitRankScalable(&comm, 2, 0, 1, nullptr, nullptr), trncclInvalidArgument);
  EXPECT_NE(lastError().find("commIds is NULL"), std::string::npos) << lastError();
  EXPECT_EQ(trncclCommInitRankScalable(&comm, 2, 2, 1, ids.data(), nullptr), trncclInvalidArgument);
  EXPECT_EQ(trncclCommInitRankScalable(nullptr, 2, 0, 1, ids.data(), nullptr),
            trncclInvalidArgument);
  std::vector<trncclUniqueId> twice = {ids[0], ids[0]};
  EXPECT_EQ(trncclCommInitRankScalable(&comm, 2, 0, 2, twice.data(), nullptr),
            trncclInvalidArgument);
  EXPECT_NE(lastError().find("name the same root"), std::string::npos) << lastError();
  EXPECT_EQ(comm, nullptr);
}

}  // namespace
}  // namespace trnccl::testing
