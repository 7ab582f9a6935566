// trncclCommInitRankScalable over N ranks in one process: each of the nId ids comes from its own
// trncclGetUniqueId (each starts a root here), every rank passes them all, and the communicator
// must then work: an all-reduce right on every rank (its transport setup ran allGathers across
// the groups), and a split of it (two more allGathers through the tiers).
#include <gtest/gtest.h>

#include <string>
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
