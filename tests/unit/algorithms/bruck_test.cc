// Bruck's all-gather and reduce-scatter: the wrapped block ranges, transfers that pair up on
// every connection, and each block moved to (or reduced into) every rank exactly once.
#include "algorithms/bruck.h"

#include <gtest/gtest.h>

#include <vector>

#include "algorithms/patterns.h"
#include "schedule_pairs.h"

namespace trnccl::algorithms {
namespace {

using schedule::Primitive;

TEST(RingRuns, SplitAtTheWrap) {
  const BlockRuns inside = ringRuns(8, 2, 4);
  EXPECT_EQ(inside.run[0].first, 2);
  EXPECT_EQ(inside.run[0].len, 4);
  EXPECT_EQ(inside.run[1].len, 0);
  const BlockRuns wrapped = ringRuns(8, 6, 4);  // 6, 7 | 0, 1
  EXPECT_EQ(wrapped.run[0].first, 6);
  EXPECT_EQ(wrapped.run[0].len, 2);
  EXPECT_EQ(wrapped.run[1].first, 0);
  EXPECT_EQ(wrapped.run[1].len, 2);
}

std::vector<schedule::Schedule> bruckSchedules(const Algorithm& algo, Collective coll, int n,
                                               size_t count, std::vector<float>& send,
                                               std::vector<float>& recv) {
  send.assign(n * count, 0);
  recv.assign(n * count, 0);
  std::vector<schedule::Schedule> out;
  for (int r = 0; r < n; ++r) {
    CollArgs a;
    a.coll = coll;
    a.rank = r;
    a.nranks = n;
    a.count = count;
    a.send = send.data();
    a.recv = recv.data();
    out.push_back(algo.build(a));
  }
  return out;
}

TEST(Bruck, TransfersPairUpOnEveryConnection) {
  std::vector<float> send, recv;
  for (int n = 2; n <= 17; ++n) {
    SCOPED_TRACE(::testing::Message() << n << " ranks");
    testing::expectPairedTransfers(
        bruckSchedules(kBruckAllGather, Collective::kAllGather, n, 3, send, recv));
    testing::expectPairedTransfers(
        bruckSchedules(kBruckReduceScatter, Collective::kReduceScatter, n, 3, send, recv));
  }
}

TEST(Bruck, EveryBlockArrivesOnceAndLogarithmically) {
  std::vector<float> send, recv;
  for (int n = 2; n <= 17; ++n) {
    int steps = 0;
    while ((1 << steps) < n) ++steps;
    const auto ag = bruckSchedules(kBruckAllGather, Collective::kAllGather, n, 3, send, recv);
    const auto rs =
        bruckSchedules(kBruckReduceScatter, Collective::kReduceScatter, n, 3, send, recv);
    for (int r = 0; r < n; ++r) {
      size_t gathered = 0, reduced = 0, finals = 0, exchanges = 0;
      for (const auto& st : ag[r].steps()) {
        if (st.prim == Primitive::kRecv) gathered += st.count;
      }
      for (const auto& st : rs[r].steps()) {
        if (st.prim == Primitive::kRecvReduceCopy) reduced += st.count;
        if (st.dst == recv.data() && st.prim == Primitive::kRecvReduceCopy) finals += st.count;
        exchanges += st.prim == Primitive::kSend && !st.withNext;
      }
      EXPECT_EQ(gathered, 3u * (n - 1)) << n << " rank " << r;  // n-1 blocks, once each
      EXPECT_EQ(reduced, 3u * (n - 1)) << n << " rank " << r;   // n-1 partials reduced in
      EXPECT_EQ(finals, 3u) << n << " rank " << r;              // the last into recvbuff
      EXPECT_LE(static_cast<int>(ag[r].steps().size()), 1 + 4 * steps) << n;
    }
  }
}

}  // namespace
}  // namespace trnccl::algorithms
