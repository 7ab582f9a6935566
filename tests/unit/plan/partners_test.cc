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

TEST(DirectRound, LastMessageToLandIsNotTheFarthestNorTheLastIssued) {
  // trn1.32xlarge, 16 ranks: 8 chips of 2 cores, two rows of a 4 x 4 torus (1.5 us a hop,
  // 0.2 us a message, 0.5 us to the other core of a chip). Rank 0 issues its k-th message to
  // rank k at 0.2 k us. The farthest chip (3 hops) is (1, 2) = chip 6, ranks 12 and 13: rank 13
  // lands at 13 x 0.2 + 3 x 1.5 = 7.1 us; the last issued (k = 15, chip 7, 2 hops) at 6.0.
  // No rank's round lasts longer (the torus is the same seen from every chip).
  auto view = describeTopology("trn1.32xlarge", 16);
  ASSERT_TRUE(view) << view.status().message();
  EXPECT_NEAR(view->links.directReachUs, 7.1, 1e-9);
  EXPECT_EQ(view->links.meshMaxHops, 3);
}

}  // namespace
}  // namespace trnccl::plan
