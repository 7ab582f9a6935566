// The direct fold of mesh all-reduce and reduce-scatter (direct_steps.cc): the member second in
// rank order folds the first arrival and its own block in one step, the arrival first, straight
// into its output, in place too (no scratch, no copy back: issue 14, a 2-rank all-reduce in place
// paid a receive into scratch, a reduce and a copy where out of place paid a receive and a
// reduce). Results are the rank-order fold x0 (op) x1 (op) ... bit for bit: of NaNs, max and
// min keep rank 0's payload on every rank.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/mesh.h"
#include "support/schedule_runner.h"

namespace trnccl::testing {
namespace {

using schedule::Primitive;

constexpr size_t kBlock = 8;  // elements per rank's block

uint32_t nanOf(int rank) { return 0x7fc00001u + uint32_t(rank); }

float input(int rank, size_t i) {
  return i % 2 == 0 ? std::bit_cast<float>(nanOf(rank)) : float(rank * 100 + i);
}

struct Case {
  bool allReduce;
  int nranks;
  bool inPlace;
  device::RedOp op;
};

std::string name(const Case& c) {
  return fmt::format("{} n={} {} op {}", c.allReduce ? "all-reduce" : "reduce-scatter", c.nranks,
                     c.inPlace ? "in place" : "out of place", static_cast<int>(c.op));
}

void check(const Case& c) {
  const int n = c.nranks;
  const size_t total = kBlock * size_t(n);
  // Each rank: its input (n blocks), then an out-of-place output region.
  std::vector<std::vector<float>> bufs(size_t(n), std::vector<float>(2 * total));
  std::vector<schedule::Schedule> s;
  std::vector<float*> outs;
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < total; ++i) bufs[r][i] = input(r, i);
    algorithms::CollArgs a;
    a.coll =
        c.allReduce ? algorithms::Collective::kAllReduce : algorithms::Collective::kReduceScatter;
    a.op = c.op;
    a.send = bufs[r].data();
    float* out =
        c.inPlace ? bufs[r].data() + (c.allReduce ? 0 : r * kBlock) : bufs[r].data() + total;
    a.recv = out;
    a.count = c.allReduce ? total : kBlock;
    a.rank = r;
    a.nranks = n;
    a.sliceBytes = 1 << 16;
    const algorithms::Algorithm& algo =
        c.allReduce ? algorithms::kMeshAllReduce : algorithms::kMeshReduceScatter;
    EXPECT_TRUE(algo.supports(a));
    s.push_back(algo.build(a));
    outs.push_back(out);
  }
  // Rank 1, second in order, receives rank 0's block and folds it with its own in one step;
  // only a member later in order, in place, keeps its running value in scratch.
  const auto& steps = s[1].steps();
  auto fold = std::find_if(steps.begin(), steps.end(),
                           [](const schedule::Step& st) { return st.prim != Primitive::kSend; });
  ASSERT_NE(fold, steps.end()) << s[1].dump();
  EXPECT_EQ(fold->prim, Primitive::kRecvReduceCopy) << s[1].dump();
  EXPECT_EQ(fold->recvPeer, 0) << s[1].dump();
  EXPECT_TRUE(fold->incomingFirst) << s[1].dump();
  for (int r = 0; r < n; ++r) {
    if (r < 2 || !c.inPlace) {
      EXPECT_EQ(s[r].scratchBytes(), 0u) << "rank " << r << s[r].dump();
    }
    for (const schedule::Step& st : s[r].steps()) {
      EXPECT_FALSE(st.prim == Primitive::kCopy && r < 2) << "rank " << r << s[r].dump();
    }
  }
  ScheduleRunner runner(s, 1 << 16);
  ASSERT_TRUE(runner.run()) << runner.stuck();
  for (int r = 0; r < n; ++r) {
    const size_t first = c.allReduce ? 0 : r * kBlock, count = c.allReduce ? total : kBlock;
    for (size_t k = 0; k < count; ++k) {
      const size_t i = first + k;
      const uint32_t got = std::bit_cast<uint32_t>(outs[r][k]);
      if (i % 2 == 0) {
        // A sum's NaN shows no order (the compiler may swap an add's operands).
        if (c.op != device::RedOp::kSum) {
          EXPECT_EQ(got, nanOf(0)) << "rank " << r << " " << i;
        }
        continue;
      }
      float want = input(0, i);
      for (int q = 1; q < n; ++q) {
        const float x = input(q, i);
        want = c.op == device::RedOp::kSum   ? want + x
               : c.op == device::RedOp::kMax ? std::max(want, x)
                                             : std::min(want, x);
      }
      EXPECT_EQ(outs[r][k], want) << "rank " << r << " element " << i;
    }
  }
}

TEST(MeshFold, SecondInOrderFoldsTheFirstArrivalAndItsOwnInOneStep) {
  for (bool allReduce : {true, false}) {
    for (int n : {2, 3}) {
      for (bool inPlace : {false, true}) {
        for (device::RedOp op : {device::RedOp::kSum, device::RedOp::kMax, device::RedOp::kMin}) {
          const Case c{allReduce, n, inPlace, op};
          SCOPED_TRACE(name(c));
          check(c);
        }
      }
    }
  }
}

}  // namespace
}  // namespace trnccl::testing
