// rank → (instance, chip, core): cores of a chip first, then chips, then instances; the
// TRNCCL_EMU_RANKS_PER_NODE override; routes between ranks.
#include "topology/layout.h"

#include <gtest/gtest.h>

#include "topo_test_util.h"

namespace trnccl::topology {
namespace {

using testing::builtin;

TEST(Layout, Trn1RankMajorWithinChipChipMajorWithinInstance) {
  Topology t = builtin("trn1.32xlarge");
  auto l = makeLayout(t, 64);
  ASSERT_TRUE(l) << l.status().message();
  EXPECT_EQ(l->ranksPerInstance, 32);
  EXPECT_EQ(l->instances, 2);
  EXPECT_EQ(l->place(0), (RankPlace{0, 0, 0, 0}));
  EXPECT_EQ(l->place(1), (RankPlace{0, 0, 1, 1}));
  EXPECT_EQ(l->place(2), (RankPlace{0, 1, 0, 2}));
  EXPECT_EQ(l->place(31), (RankPlace{0, 15, 1, 31}));
  EXPECT_EQ(l->place(32), (RankPlace{1, 0, 0, 0}));
  EXPECT_EQ(l->place(45), (RankPlace{1, 6, 1, 13}));
  for (int r = 0; r < 64; ++r) {
    const RankPlace& p = l->place(r);
    EXPECT_EQ(l->rankAt(p.instance, p.chip, p.core), r);
  }
  EXPECT_EQ(l->rankAt(2, 0, 0), -1);
  EXPECT_EQ(l->rankAt(0, 0, 2), -1);
  EXPECT_EQ(l->descCopy(45), 1);
  EXPECT_EQ(l->descChip(45), 6);
}

TEST(Layout, Lnc2HasFourRanksPerChip) {
  Topology t = builtin("trn2.48xlarge-lnc2");
  auto l = makeLayout(t, 64);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->place(5), (RankPlace{0, 1, 1, 5}));
  EXPECT_EQ(l->place(63), (RankPlace{0, 15, 3, 63}));
}

TEST(Layout, UltraServerInstancesAreOneDescription) {
  Topology t = builtin("trn2-ultraserver");
  auto l = makeLayout(t, 1024);  // two UltraServers
  ASSERT_TRUE(l);
  EXPECT_EQ(l->instances, 8);
  EXPECT_EQ(l->place(128 * 5 + 17), (RankPlace{5, 2, 1, 17}));
  EXPECT_EQ(l->descCopy(128 * 5 + 17), 1);
  EXPECT_EQ(l->descChip(128 * 5 + 17), 16 + 2);
}

TEST(Layout, EightRanksPerInstanceSplitOneHostIntoInstances) {
  Topology t = builtin("trn1.32xlarge");
  auto l = makeLayout(t, 16, 8);
  ASSERT_TRUE(l) << l.status().message();
  EXPECT_EQ(l->ranksPerInstance, 8);
  EXPECT_EQ(l->instances, 2);
  EXPECT_EQ(l->place(7), (RankPlace{0, 3, 1, 7}));
  EXPECT_EQ(l->place(9), (RankPlace{1, 0, 1, 1}));
}

TEST(Layout, PartialLastInstance) {
  Topology t = builtin("trn1.32xlarge");
  auto l = makeLayout(t, 10, 4);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->instances, 3);
  EXPECT_EQ(l->place(9), (RankPlace{2, 0, 1, 1}));
  EXPECT_EQ(l->rankAt(2, 1, 0), -1);
}

TEST(Layout, Errors) {
  Topology t = builtin("trn1.32xlarge");
  EXPECT_FALSE(makeLayout(t, 0));
  auto tooMany = makeLayout(t, 64, 33);
  ASSERT_FALSE(tooMany);
  EXPECT_NE(tooMany.status().message().find("at most 32"), std::string::npos)
      << tooMany.status().message();
}

TEST(Routes, BetweenRanks) {
  Topology t = builtin("trn1.32xlarge");
  auto l = makeLayout(t, 64);
  ASSERT_TRUE(l);
  auto sameChip = routeBetweenRanks(t, *l, 0, 1);
  ASSERT_TRUE(sameChip);
  EXPECT_EQ(sameChip->hops, 0);
  EXPECT_EQ(sameChip->link.bandwidthGbps, 410);     // a rank's share of the chip's HBM
  auto neighbour = routeBetweenRanks(t, *l, 0, 2);  // chip 0 → chip 1
  ASSERT_TRUE(neighbour);
  EXPECT_EQ(neighbour->hops, 1);
  EXPECT_EQ(neighbour->link.cls, LinkClass::kNeuronLink);
  EXPECT_EQ(neighbour->link.bandwidthGbps, 96);
  auto far = routeBetweenRanks(t, *l, 0, 20);  // chip 10 = (2, 2)
  ASSERT_TRUE(far);
  EXPECT_EQ(far->hops, 4);
  EXPECT_DOUBLE_EQ(far->link.latencyUs, 4 * 1.5);
  auto network = routeBetweenRanks(t, *l, 0, 32);
  ASSERT_TRUE(network);
  EXPECT_EQ(network->link.cls, LinkClass::kEfa);

  Topology single = builtin("trn1.2xlarge");
  auto two = makeLayout(single, 4);
  ASSERT_TRUE(two);
  EXPECT_FALSE(routeBetweenRanks(single, *two, 0, 2)) << "no network is described";
}

TEST(Routes, UltraServerZHops) {
  Topology t = builtin("trn2-ultraserver");
  auto z = routeBetween(t, 5, 5 + 16 * 2);  // two Z hops, same coordinate
  ASSERT_TRUE(z);
  EXPECT_EQ(z->hops, 2);
  EXPECT_EQ(z->link.bandwidthGbps, 128);
  auto direct = routeBetween(t, 5, 5 + 16 * 3);  // Z ring wraps: one hop
  ASSERT_TRUE(direct);
  EXPECT_EQ(direct->hops, 1);
}

}  // namespace
}  // namespace trnccl::topology
