// The one ring all-reduce (ring_steps.cc): the textbook fused sequence, per iteration and
// channel, and the grid compositions' column all-reduce built from the same steps.
#include "algorithms/ring_steps.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

#include "algorithms/grid_compose.h"

namespace trnccl::algorithms {
namespace {

using schedule::Primitive;
using schedule::Step;

schedule::Schedule floatSchedule(int nranks) {
  CollArgs a;
  a.nranks = nranks;
  return startSchedule(a, "test");
}

// Offset of `p` into `base`, in bytes.
ptrdiff_t offsetIn(const void* p, const std::vector<float>& base) {
  return static_cast<const std::byte*>(p) - reinterpret_cast<const std::byte*>(base.data());
}

TEST(RingAllReduce, TextbookSequencePerIteration) {
  const schedule::Schedule s = floatSchedule(4);
  const Ring ring = ringAt({3, 1, 0, 2}, 0);  // position 2: prev 1, next 2
  // 10 elements per slice, so iterations of 40: 70 elements make two (40, then 30).
  std::vector<float> in(70), out(70);
  std::vector<Step> steps;
  ringAllReduceSteps(s, steps, ring, reinterpret_cast<const std::byte*>(in.data()),
                     reinterpret_cast<std::byte*>(out.data()), in.size(), 10, true);
  const std::vector<Primitive> iteration = {Primitive::kSend,
                                            Primitive::kRecvReduceSend,
                                            Primitive::kRecvReduceSend,
                                            Primitive::kRecvReduceCopySend,
                                            Primitive::kRecvCopySend,
                                            Primitive::kRecvCopySend,
                                            Primitive::kRecv};
  ASSERT_EQ(steps.size(), 2 * iteration.size());
  size_t final = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& st = steps[i];
    EXPECT_EQ(st.prim, iteration[i % iteration.size()]) << "step " << i;
    EXPECT_EQ(st.recvPeer, schedule::receives(st.prim) ? 1 : -1) << "step " << i;
    EXPECT_EQ(st.sendPeer, schedule::sends(st.prim) ? 2 : -1) << "step " << i;
    EXPECT_EQ(st.postOp, st.prim == Primitive::kRecvReduceCopySend) << "step " << i;
    EXPECT_EQ(offsetIn(st.src, in), offsetIn(st.dst, out)) << "step " << i;
    if (st.prim == Primitive::kRecvReduceCopySend) final += st.count;
  }
  // This rank owns block 2 of each iteration: 10 of 40, then 7 of 30 (blocks 8, 8, 7, 7).
  EXPECT_EQ(final, 10u + 7u);
}

TEST(RingAllReduce, OneMemberCopies) {
  const schedule::Schedule s = floatSchedule(1);
  std::vector<float> in(5), out(5);
  std::vector<Step> steps;
  ringAllReduceSteps(s, steps, ringAt({0}, 0), reinterpret_cast<const std::byte*>(in.data()),
                     reinterpret_cast<std::byte*>(out.data()), 5, 4, false);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].prim, Primitive::kCopy);
  EXPECT_EQ(steps[0].count, 5u);
}

// A 2 x 3 grid: the column all-reduce (rows {0,1,2} and {3,4,5}; rank 4's column is {1, 4}) is
// the fused ring, so the column peer 1 appears in a recvReduceCopySend; the rows only reduce-
// scatter and all-gather.
TEST(RingAllReduce, GridColumnUsesTheFusedRing) {
  Grid g;
  g.rows = {{0, 1, 2}, {3, 4, 5}};
  std::vector<float> buf(600);
  CollArgs a;
  a.count = buf.size();
  a.send = buf.data();
  a.recv = buf.data();
  a.rank = 4;
  a.nranks = 6;
  const schedule::Schedule s = gridAllReduce(a, g, "grid");
  int fusedFromColumn = 0, fusedFromRow = 0;
  for (const Step& st : s.steps()) {
    if (st.prim != Primitive::kRecvReduceCopySend) continue;
    (st.recvPeer == 1 ? fusedFromColumn : fusedFromRow)++;
    EXPECT_EQ(st.sendPeer, 1);  // a ring of two: prev and next are the same peer
  }
  EXPECT_EQ(fusedFromColumn, 1);  // 200 elements in the column: one iteration
  EXPECT_EQ(fusedFromRow, 0);
}

}  // namespace
}  // namespace trnccl::algorithms
