// Groups, point-to-point and communicator split.
#include <gtest/gtest.h>

#include <numeric>
#include <thread>
#include <vector>

#include "support/ranks.h"

namespace trnccl::testing {
namespace {

// Each rank sends to rank+1 and receives from rank-1 inside one group, for 1..8 ranks, in both
// call orders (send first on even ranks, recv first on odd ones).
TEST(Group, RingExchangeCompletesForOneToEightRanks) {
  for (int n = 1; n <= 8; ++n) {
    Ranks& ranks = Ranks::get(n);
    ranks.run([&](int r) {
      const size_t count = 300000 + r;  // large enough to exceed a FIFO; odd
      std::vector<int32_t> send(count, 100 + r), recv(300000 + (r + n - 1) % n, -1);
      int next = (r + 1) % n, prev = (r + n - 1) % n;
      ASSERT_EQ(trncclGroupStart(), trncclSuccess);
      if (r % 2 == 0) {
        ASSERT_EQ(trncclSend(send.data(), count, trncclInt32, next, ranks.comm(r), ranks.stream(r)),
                  trncclSuccess);
        ASSERT_EQ(
            trncclRecv(recv.data(), recv.size(), trncclInt32, prev, ranks.comm(r), ranks.stream(r)),
            trncclSuccess);
      } else {
        ASSERT_EQ(
            trncclRecv(recv.data(), recv.size(), trncclInt32, prev, ranks.comm(r), ranks.stream(r)),
            trncclSuccess);
        ASSERT_EQ(trncclSend(send.data(), count, trncclInt32, next, ranks.comm(r), ranks.stream(r)),
                  trncclSuccess);
      }
      ASSERT_EQ(trncclGroupEnd(), trncclSuccess) << trncclGetLastError(nullptr);
      ASSERT_EQ(trnrtStreamSynchronize(ranks.stream(r)), trnrtSuccess)
          << trnrtGetLastErrorMessage();
      EXPECT_EQ(recv.front(), 100 + prev) << "n " << n << " rank " << r;
      EXPECT_EQ(recv.back(), 100 + prev) << "n " << n << " rank " << r;
    });
  }
}

// Both ranks send first then receive, without a group the large sends would wait on each
// other; inside a group they complete. Several messages to the same peer keep their order.
TEST(Group, SendsBeforeRecvsAndOrderPerPeer) {
  Ranks& ranks = Ranks::get(2);
  ranks.run([&](int r) {
    int peer = 1 - r;
    std::vector<std::vector<float>> send(3), recv(3);
    for (int m = 0; m < 3; ++m) {
      send[m].assign(200000 + m, static_cast<float>(10 * r + m));
      recv[m].assign(200000 + m, -1.0f);
    }
    ASSERT_EQ(trncclGroupStart(), trncclSuccess);
    ASSERT_EQ(trncclGroupStart(), trncclSuccess);  // nested
    for (int m = 0; m < 3; ++m) {
      ASSERT_EQ(trncclSend(send[m].data(), send[m].size(), trncclFloat, peer, ranks.comm(r),
                           ranks.stream(r)),
                trncclSuccess);
    }
    ASSERT_EQ(trncclGroupEnd(), trncclSuccess);
    for (int m = 0; m < 3; ++m) {
      ASSERT_EQ(trncclRecv(recv[m].data(), recv[m].size(), trncclFloat, peer, ranks.comm(r),
                           ranks.stream(r)),
                trncclSuccess);
    }
    ASSERT_EQ(trncclGroupEnd(), trncclSuccess);
    ASSERT_EQ(trnrtStreamSynchronize(ranks.stream(r)), trnrtSuccess) << trnrtGetLastErrorMessage();
    for (int m = 0; m < 3; ++m) {
      EXPECT_EQ(recv[m].front(), static_cast<float>(10 * peer + m));
      EXPECT_EQ(recv[m].back(), static_cast<float>(10 * peer + m));
    }
  });
}

TEST(Group, SendToSelfAndLoneSendRecv) {
  Ranks& ranks = Ranks::get(3);
  ranks.run([&](int r) {
    int64_t mine = 7 + r, self = 0;
    ASSERT_EQ(trncclGroupStart(), trncclSuccess);
    ASSERT_EQ(trncclSend(&mine, 1, trncclInt64, r, ranks.comm(r), ranks.stream(r)), trncclSuccess);
    ASSERT_EQ(trncclRecv(&self, 1, trncclInt64, r, ranks.comm(r), ranks.stream(r)), trncclSuccess);
    ASSERT_EQ(trncclGroupEnd(), trncclSuccess);
    // Outside a group: rank 0 sends to 2, rank 2 receives from 0; rank 1 does nothing, then
    // every rank joins an all-reduce, which must not be confused by the point-to-point traffic.
    int64_t v = 0;
    if (r == 0) {
      ASSERT_EQ(trncclSend(&mine, 1, trncclInt64, 2, ranks.comm(r), ranks.stream(r)),
                trncclSuccess);
    }
    if (r == 2) {
      ASSERT_EQ(trncclRecv(&v, 1, trncclInt64, 0, ranks.comm(r), ranks.stream(r)), trncclSuccess);
    }
    int64_t sum = 1;
    ASSERT_EQ(
        trncclAllReduce(&sum, &sum, 1, trncclInt64, trncclSum, ranks.comm(r), ranks.stream(r)),
        trncclSuccess);
    ASSERT_EQ(trnrtStreamSynchronize(ranks.stream(r)), trnrtSuccess) << trnrtGetLastErrorMessage();
    EXPECT_EQ(self, 7 + r);
    if (r == 2) {
      EXPECT_EQ(v, 7);
    }
    EXPECT_EQ(sum, 3);
  });
}

TEST(Group, ErrorInsideGroupIsReportedByGroupEnd) {
  Ranks& ranks = Ranks::get(2);
  float x = 0;
  ASSERT_EQ(trncclGroupStart(), trncclSuccess);
  EXPECT_EQ(trncclSend(&x, 1, trncclFloat, 5, ranks.comm(0), ranks.stream(0)),
            trncclInvalidArgument);
  EXPECT_EQ(trncclGroupEnd(), trncclInvalidArgument);
  EXPECT_NE(std::string(trncclGetLastError(nullptr)).find("peer 5"), std::string::npos);
  EXPECT_EQ(trncclGroupEnd(), trncclInvalidUsage);  // unmatched
}

// One thread creates four communicators inside a group (impossible without one: each init
// waits for the others).
TEST(Group, InitSeveralCommunicatorsFromOneThread) {
  trncclUniqueId id;
  ASSERT_EQ(trncclGetUniqueId(&id), trncclSuccess);
  const int n = 4;
  std::vector<trncclComm_t> comms(n, nullptr);
  ASSERT_EQ(trncclGroupStart(), trncclSuccess);
  for (int r = 0; r < n; ++r) {
    trnrtSetDevice(r);
    ASSERT_EQ(trncclCommInitRank(&comms[r], n, id, r), trncclSuccess);
  }
  ASSERT_EQ(trncclGroupEnd(), trncclSuccess) << trncclGetLastError(nullptr);
  trnrtSetDevice(0);
  std::vector<std::vector<int32_t>> data(n);
  for (int r = 0; r < n; ++r) {
    int dev = -1;
    ASSERT_EQ(trncclCommDevice(comms[r], &dev), trncclSuccess);
    EXPECT_EQ(dev, r);
    data[r].assign(1000, r);
    // NULL stream: each communicator's own device's default stream, so one thread can issue
    // all four without a group.
    ASSERT_EQ(trncclAllReduce(data[r].data(), data[r].data(), 1000, trncclInt32, trncclSum,
                              comms[r], nullptr),
              trncclSuccess);
  }
  for (int r = 0; r < n; ++r) {
    trnrtSetDevice(r);
    ASSERT_EQ(trnrtDeviceSynchronize(), trnrtSuccess);
    EXPECT_EQ(data[r][999], 6);
  }
  trnrtSetDevice(0);
  for (auto c : comms) EXPECT_EQ(trncclCommDestroy(c), trncclSuccess);
}

// Split 8 ranks into odd and even (key reverses the order), a NOCOLOR rank gets NULL, and the
// two halves run all-reduces concurrently.
TEST(Split, ColorsKeysNoColorAndConcurrentUse) {
  Ranks& ranks = Ranks::get(8);
  std::vector<trncclComm_t> sub(8, nullptr);
  ranks.run([&](int r) {
    int color = r == 7 ? TRNCCL_SPLIT_NOCOLOR : r % 2;
    ASSERT_EQ(trncclCommSplit(ranks.comm(r), color, -r, &sub[r], nullptr), trncclSuccess)
        << trncclGetLastError(nullptr);
    if (r == 7) {
      EXPECT_EQ(sub[r], nullptr);
      return;
    }
    int count = 0, rank = -1;
    ASSERT_EQ(trncclCommCount(sub[r], &count), trncclSuccess);
    ASSERT_EQ(trncclCommUserRank(sub[r], &rank), trncclSuccess);
    int members = r % 2 == 0 ? 4 : 3;  // evens 0,2,4,6; odds 1,3,5
    EXPECT_EQ(count, members);
    // key = -r: the highest parent rank of each color becomes rank 0.
    int expectedRank = r % 2 == 0 ? (6 - r) / 2 : (5 - r) / 2;
    EXPECT_EQ(rank, expectedRank);
    std::vector<int64_t> v(50000, r);
    for (int iter = 0; iter < 3; ++iter) {
      std::fill(v.begin(), v.end(), r);
      ASSERT_EQ(trncclAllReduce(v.data(), v.data(), v.size(), trncclInt64, trncclSum, sub[r],
                                ranks.stream(r)),
                trncclSuccess);
      ASSERT_EQ(trnrtStreamSynchronize(ranks.stream(r)), trnrtSuccess)
          << trnrtGetLastErrorMessage();
      EXPECT_EQ(v.back(), r % 2 == 0 ? 0 + 2 + 4 + 6 : 1 + 3 + 5);
    }
  });
  for (auto c : sub) EXPECT_EQ(trncclCommDestroy(c), trncclSuccess);
}

}  // namespace
}  // namespace trnccl::testing
