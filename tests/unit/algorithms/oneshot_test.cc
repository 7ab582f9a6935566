// The 2-rank oneshot all-reduce (allreduce/oneshot.cc): one group per rank (the send and the
// fold as the peer's operand arrives), and both ranks fold x0 (op) x1 in that order, so their
// results are the same bits even where an op is not commutative bit for bit (max or min of two
// NaNs).
#include "algorithms/allreduce/oneshot.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <vector>

#include "support/schedule_runner.h"

namespace trnccl::testing {
namespace {

using schedule::Primitive;

// Two quiet NaNs that differ only in their payload.
constexpr uint32_t kNanOfRank[2] = {0x7fc00001u, 0x7fc00002u};

std::vector<schedule::Schedule> build(std::vector<std::vector<float>>& bufs, size_t count,
                                      device::RedOp op, bool inPlace) {
  std::vector<schedule::Schedule> out;
  for (int r = 0; r < 2; ++r) {
    algorithms::CollArgs a;
    a.coll = algorithms::Collective::kAllReduce;
    a.op = op;
    a.send = bufs[r].data();
    a.recv = inPlace ? bufs[r].data() : bufs[r].data() + count;
    a.count = count;
    a.rank = r;
    a.nranks = 2;
    a.sliceBytes = 1 << 16;
    EXPECT_TRUE(algorithms::allreduce::kOneShot.supports(a));
    out.push_back(algorithms::allreduce::kOneShot.build(a));
  }
  return out;
}

TEST(OneShotTwoRanks, OneGroupAndTheSameBitsOnBothRanks) {
  constexpr size_t kCount = 16;
  for (device::RedOp op : {device::RedOp::kSum, device::RedOp::kMax, device::RedOp::kMin}) {
    for (bool inPlace : {false, true}) {
      std::vector<std::vector<float>> bufs(2, std::vector<float>(2 * kCount));
      for (int r = 0; r < 2; ++r) {
        for (size_t i = 0; i < kCount; ++i) {
          bufs[r][i] = i % 2 == 0 ? std::bit_cast<float>(kNanOfRank[r]) : float(r * 10 + i);
        }
      }
      std::vector<schedule::Schedule> s = build(bufs, kCount, op, inPlace);
      for (int r = 0; r < 2; ++r) {
        // Out of place: the send and the fold, run together (in place, a copy to scratch first).
        const auto& steps = s[r].steps();
        ASSERT_EQ(steps.size(), inPlace ? 3u : 2u) << s[r].dump();
        EXPECT_EQ(steps.back().prim, Primitive::kRecvReduceCopy);
        EXPECT_TRUE(steps[steps.size() - 2].withNext);
        EXPECT_EQ(steps.back().incomingFirst, r == 1);
      }
      ScheduleRunner runner(s, 1 << 16);
      ASSERT_TRUE(runner.run()) << runner.stuck();
      for (size_t i = 0; i < kCount; ++i) {
        const float* r0 = bufs[0].data() + (inPlace ? 0 : kCount);
        const float* r1 = bufs[1].data() + (inPlace ? 0 : kCount);
        const uint32_t b0 = std::bit_cast<uint32_t>(r0[i]), b1 = std::bit_cast<uint32_t>(r1[i]);
        EXPECT_EQ(b0, b1) << "op " << static_cast<int>(op) << " element " << i;
        // x0 (op) x1: of two NaNs, the first operand's (rank 0's) payload.
        if (i % 2 == 1) {
          const float x0 = float(i), x1 = float(10 + i);
          const float want = op == device::RedOp::kSum   ? x0 + x1
                             : op == device::RedOp::kMax ? x1
                                                         : x0;
          EXPECT_EQ(r0[i], want) << i;
        } else if (op != device::RedOp::kSum) {
          // Max and min of two NaNs keep their first operand's: x0 (op) x1 is rank 0's. (The
          // compiler may swap the operands of an add, so a sum's NaN shows no order.)
          EXPECT_EQ(b0, kNanOfRank[0]) << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace trnccl::testing
