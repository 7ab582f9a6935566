// The cost model's partner levels (algorithms::PartnerLevel): where the partners at distance 2^k
// are, from the description's routes (plan/topology_view.cc describePartners).
#include <gtest/gtest.h>

#include "plan/topology_view.h"

namespace trnccl::plan {
namespace {

TEST(PartnerLevels, Trn2ChipsOfFourRanksAndTheirTorusHops) {
  auto view = describeTopology("trn2.48xlarge-lnc2", 64);  // 16 chips of 4 ranks, 4 x 4 torus
  ASSERT_TRUE(view) << view.status().message();
  const auto& m = view->links;
  ASSERT_EQ(m.partnerLevels, 6);
  // r ^ 1 and r ^ 2 stay on the chip; r ^ 4: the next chip of the row, one hop; r ^ 32: two
  // torus rows away, two hops.
  EXPECT_EQ(m.xorPartners[0].offChip, 0);
  EXPECT_EQ(m.xorPartners[1].offChip, 0);
  EXPECT_EQ(m.xorPartners[2].offChip, 1);
  EXPECT_EQ(m.xorPartners[2].hops, 1);
  EXPECT_EQ(m.xorPartners[5].hops, 2);
  // r + 1 leaves the chip for one rank of four.
  EXPECT_DOUBLE_EQ(m.shiftPartners[0].offChip, 0.25);
  EXPECT_EQ(m.shiftPartners[0].offInstance, 0);
}

TEST(PartnerLevels, TreeEdgesAcrossInstancesAtScale) {
  // 64 instances of 32 ranks: the tree's edges of length 1 to 8 stay in an instance (an edge
  // below a position whose lowest bit is b stays in an aligned block of 2b ranks); from 16 on
  // some cross the network.
  auto view = describeTopology("trn1.32xlarge", 2048);
  ASSERT_TRUE(view) << view.status().message();
  const auto& m = view->links;
  ASSERT_EQ(m.partnerLevels, 11);
  for (int k = 0; k < 11; ++k) {
    if (k < 4) {
      EXPECT_EQ(m.treePartners[k].offInstance, 0) << k;
    } else {
      EXPECT_GT(m.treePartners[k].offInstance, 0) << k;
    }
  }
}

}  // namespace
}  // namespace trnccl::plan
