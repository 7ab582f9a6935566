// Subgroups (instance, leaders/rails, torus rows and columns, Z rings) and rank rings.
#include "topology/subgroups.h"

#include <gtest/gtest.h>

#include <set>

#include "topo_test_util.h"
#include "topology/rings.h"
#include "topology/torus.h"

namespace trnccl::topology {
namespace {

using testing::builtin;

Layout layoutOf(const Topology& t, int nranks, int perInstance = 0) {
  auto l = makeLayout(t, nranks, perInstance);
  EXPECT_TRUE(l) << l.status().message();
  return l ? *l : Layout{};
}

Group range(int first, int count) {
  Group g;
  for (int i = 0; i < count; ++i) g.push_back(first + i);
  return g;
}

TEST(Subgroups, Trn1With16Ranks) {
  Topology t = builtin("trn1.32xlarge");
  Layout l = layoutOf(t, 16);  // chips 0..7: rows 0 and 1
  EXPECT_EQ(instanceGroups(l), (std::vector<Group>{range(0, 16)}));
  EXPECT_EQ(leaderGroup(l), (Group{0}));
  EXPECT_EQ(torusRowGroups(t, l), (std::vector<Group>{range(0, 8), range(8, 8)}));
  std::vector<Group> cols = torusColumnGroups(t, l);
  ASSERT_EQ(cols.size(), 4u);
  for (int c = 0; c < 4; ++c) {
    EXPECT_EQ(cols[c], (Group{2 * c, 2 * c + 1, 2 * c + 8, 2 * c + 9})) << "column " << c;
  }
  EXPECT_EQ(chipGroups(l).size(), 8u);
  EXPECT_EQ(chipGroups(l)[3], (Group{6, 7}));
}

TEST(Subgroups, Trn1With32Ranks) {
  Topology t = builtin("trn1.32xlarge");
  Layout l = layoutOf(t, 32);
  std::vector<Group> rows = torusRowGroups(t, l);
  ASSERT_EQ(rows.size(), 4u);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(rows[r], range(8 * r, 8)) << "row " << r;
  std::vector<Group> cols = torusColumnGroups(t, l);
  ASSERT_EQ(cols.size(), 4u);
  for (int c = 0; c < 4; ++c) {
    Group expected;
    for (int r = 0; r < 4; ++r) expected.insert(expected.end(), {8 * r + 2 * c, 8 * r + 2 * c + 1});
    EXPECT_EQ(cols[c], expected) << "column " << c;
  }
  EXPECT_EQ(torusRowChips(t)[1], (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(torusColumnChips(t)[1], (std::vector<int>{1, 5, 9, 13}));
}

TEST(Subgroups, TwoEmulatedInstancesOfEightRanks) {
  Topology t = builtin("trn1.32xlarge");
  auto made = makeLayout(t, 16, 8);
  ASSERT_TRUE(made);
  const Layout& l = *made;
  EXPECT_EQ(instanceGroups(l), (std::vector<Group>{range(0, 8), range(8, 8)}));
  EXPECT_EQ(leaderGroup(l), (Group{0, 8}));
  std::vector<Group> rails = railGroups(l);
  ASSERT_EQ(rails.size(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(rails[i], (Group{i, i + 8})) << "rail " << i;
  // Each instance uses chips 0..3: one torus row each.
  EXPECT_EQ(torusRowGroups(t, l), (std::vector<Group>{range(0, 8), range(8, 8)}));
  std::vector<Group> cols = torusColumnGroups(t, l);
  ASSERT_EQ(cols.size(), 8u);
  EXPECT_EQ(cols[1], (Group{2, 3}));
  EXPECT_EQ(cols[4 + 1], (Group{10, 11}));
}

TEST(Subgroups, NotATorus) {
  Topology t = builtin("trn3-ultraserver-gen1");
  Layout l = layoutOf(t, 64);
  EXPECT_TRUE(torusRowGroups(t, l).empty());
  EXPECT_TRUE(zRingChips(t).empty());
}

TEST(Subgroups, UltraServerZRings) {
  Topology t = builtin("trn2-ultraserver");
  auto chips = zRingChips(t);
  ASSERT_EQ(chips.size(), 16u);
  EXPECT_EQ(chips[5], (std::vector<int>{5, 21, 37, 53}));
  for (const auto& ring : chips) {
    for (size_t i = 0; i < ring.size(); ++i) {
      auto route = routeBetween(t, ring[i], ring[(i + 1) % ring.size()]);
      ASSERT_TRUE(route);
      EXPECT_EQ(route->hops, 1);
    }
  }
  Layout l = layoutOf(t, 512);
  auto groups = zRingGroups(t, l);
  ASSERT_EQ(groups.size(), 16u * 8);
  EXPECT_EQ(groups[0], (Group{0, 128, 256, 384}));
  EXPECT_EQ(groups[8 * 2 + 3], (Group{19, 147, 275, 403}));  // chip 2, core 3
}

void expectPermutation(const std::vector<int>& ring, int n) {
  ASSERT_EQ(ring.size(), static_cast<size_t>(n));
  EXPECT_EQ(std::set<int>(ring.begin(), ring.end()).size(), ring.size());
}

TEST(RankRings, FullTrn1HasTwoDisjointChannelsAlongLinks) {
  Topology t = builtin("trn1.32xlarge");
  Layout l = layoutOf(t, 32);
  auto rings = rankRings(t, l);
  ASSERT_EQ(rings.size(), 2u);
  std::set<std::pair<int, int>> chipEdges[2];
  for (int k = 0; k < 2; ++k) {
    expectPermutation(rings[k], 32);
    EXPECT_TRUE(ringFollowsLinks(t, l, rings[k]));
    for (size_t i = 0; i < rings[k].size(); i += 2) {
      EXPECT_EQ(l.place(rings[k][i]).chip, l.place(rings[k][i + 1]).chip) << "cores consecutive";
      int a = l.place(rings[k][i + 1]).chip;
      int b = l.place(rings[k][(i + 2) % rings[k].size()]).chip;
      chipEdges[k].insert({std::min(a, b), std::max(a, b)});
    }
  }
  for (const auto& e : chipEdges[0]) EXPECT_FALSE(chipEdges[1].contains(e));
}

TEST(RankRings, PartialInstancesStillFollowLinks) {
  Topology t = builtin("trn1.32xlarge");
  Layout half = layoutOf(t, 16);
  auto rings = rankRings(t, half);
  ASSERT_EQ(rings.size(), 1u);
  expectPermutation(rings[0], 16);
  EXPECT_TRUE(ringFollowsLinks(t, half, rings[0]));

  Layout emu = layoutOf(t, 16, 8);
  auto emuRings = rankRings(t, emu);
  ASSERT_EQ(emuRings.size(), 1u);
  EXPECT_EQ(emuRings[0], range(0, 16));
  EXPECT_TRUE(ringFollowsLinks(t, emu, emuRings[0]));
}

TEST(RankRings, UltraServerStepsAcrossInstancesOnZLinks) {
  Topology t = builtin("trn2-ultraserver");
  Layout l = layoutOf(t, 512);
  auto rings = rankRings(t, l);
  ASSERT_EQ(rings.size(), 2u);
  for (const auto& ring : rings) {
    expectPermutation(ring, 512);
    EXPECT_TRUE(ringFollowsLinks(t, l, ring));
  }
}

TEST(RankRings, SwitchAndSingleChip) {
  Topology sw = builtin("trn3-ultraserver-gen2");
  Layout l = layoutOf(sw, 64);
  auto rings = rankRings(sw, l);
  ASSERT_EQ(rings.size(), 1u);
  EXPECT_EQ(rings[0], range(0, 64));
  EXPECT_TRUE(ringFollowsLinks(sw, l, rings[0]));

  Topology one = builtin("trn1.2xlarge");
  Layout two = layoutOf(one, 2);
  EXPECT_EQ(rankRings(one, two), (std::vector<std::vector<int>>{{0, 1}}));
}

}  // namespace
}  // namespace trnccl::topology
