// The box of ranks along a fabric's dimensions (topology/rank_box.h): sizes and the rank at each
// coordinate on a 3D torus and a switch, and the layouts that make no box.
#include "topology/rank_box.h"

#include <gtest/gtest.h>

#include "topo_test_util.h"

namespace trnccl::topology {
namespace {

using testing::builtin;

std::optional<RankBox> boxOf(const Topology& t, int nranks, int perInstance = 0) {
  auto l = makeLayout(t, nranks, perInstance);
  EXPECT_TRUE(l) << l.status().message();
  return l ? rankBox(t, *l) : std::nullopt;
}

TEST(RankBox, Trn2UltraServer) {
  Topology t = builtin("trn2-ultraserver");
  auto whole = boxOf(t, 512);
  ASSERT_TRUE(whole);
  EXPECT_EQ(whole->sizes, (std::vector<int>{8, 4, 4, 4}));  // core, X, Y, Z
  ASSERT_EQ(whole->ranks.size(), 512u);
  // Rank order is box order: rank 8 is core 0 of chip 1 (X 1), rank 128 instance 1 (Z 1).
  EXPECT_EQ(whole->ranks[8], 8);
  EXPECT_EQ(whole->ranks[128], 128);
  // 4 instances of 2 chips (one prefix of a row), and one instance of 8 chips (2 rows).
  auto two = boxOf(t, 64, 16);
  ASSERT_TRUE(two);
  EXPECT_EQ(two->sizes, (std::vector<int>{8, 2, 1, 4}));
  auto rows = boxOf(t, 64);
  ASSERT_TRUE(rows);
  EXPECT_EQ(rows->sizes, (std::vector<int>{8, 4, 2, 1}));
  // 3 chips past one row, a partly filled instance: no box.
  EXPECT_FALSE(boxOf(t, 48 + 8 * 4, 0));
  EXPECT_FALSE(boxOf(t, 72, 16));
}

TEST(RankBox, SwitchServersAndChips) {
  Topology g2 = builtin("trn3-ultraserver-gen2");
  auto whole = boxOf(g2, 1152);
  ASSERT_TRUE(whole);
  EXPECT_EQ(whole->sizes, (std::vector<int>{8, 4, 36}));  // core, chip, server
  auto halfChips = boxOf(g2, 16, 4);
  ASSERT_TRUE(halfChips);
  EXPECT_EQ(halfChips->sizes, (std::vector<int>{4, 1, 4}));
  EXPECT_EQ(halfChips->ranks[5], 5);  // server 1, core 1
  // A 2D torus has no such box (torus2d and kangaring run there).
  EXPECT_FALSE(boxOf(builtin("trn1.32xlarge"), 32));
}

}  // namespace
}  // namespace trnccl::topology
