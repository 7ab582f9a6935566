// The cost model's estimates past one copy of a description whose fabric joins its instances
// (a switch's higher tier, a 3D torus's Z links): the network joins only the copies
// (LinkModel::fabricInstances), as the simulator routes them (topology::FabricModel::route).
// Worked out by hand as in estimates_test.cc; the simulated time trnccl-sim gives is in the
// comment.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "algorithms/cost.h"
#include "algorithms/hierarchical.h"
#include "algorithms/registry.h"
#include "plan/topology_view.h"
#include "unit/plan/estimate_util.h"

namespace trnccl::plan {
namespace {

using algorithms::CollArgs;
using algorithms::Collective;

using test::call;
using test::estimateOf;

// 64 servers of trn3-ultraserver-gen2 (2,048 ranks: two copies of the description, 36 and 28
// servers), flat ring all-gather of 32 MiB (16 KiB a rank, one slice a step): of the ring's
// 2,048 steps 2 cross the network between the copies (15 us, the rail's 25 GB/s), 62 cross
// servers of one copy on the switch's higher tier (3 us, 320 GB/s), and the other 1,984 steps
// stay in a server (a chip's 0.6875 us on average: 7 core steps of 0.5 us and one of the
// port's 2 us; the DMA queue's 612.5 GB/s). Each hop is a message, the average latency and a
// piece at the steps' average rate, longer than the rank's own slice (a message and 16 KiB at
// the rail's rate); then the copy of the rank's own block. trnccl-sim: 1,959.1 us, and the
// hierarchy 2,255.0. Before: 2,827.3 (all 64 server steps on the network), and the hierarchy
// (2,807.8, its columns' 64 steps likewise) was picked, 15 % slower.
TEST(EstimatesCopies, RingCrossesTheNetworkOncePerCopy) {
  auto view = describeTopology("trn3-ultraserver-gen2", 2048);
  ASSERT_TRUE(view) << view.status().message();
  ASSERT_TRUE(view->links.multiInstance);
  EXPECT_EQ(view->links.fabricInstances, 36);
  const CollArgs a = call(*view, Collective::kAllGather, 4096);
  const double latency = (2 * 15 + 62 * 3 + 1984 * 0.6875) / 2048;
  const double rate = 2048 / (2 / 25e3 + 62 / 320e3 + 1984 / 612.5e3);
  const double hop = 0.2 + latency + 16384 / rate;
  ASSERT_GT(hop, 0.2 + 16384 / 25e3);
  const double ring = estimateOf("ring", a, view->links);
  EXPECT_NEAR(ring, 2047 * hop + 16384 / 306.25e3, 0.01);
  EXPECT_NEAR(ring, 1959.1, 0.05 * 1959.1);
  const double hierarchical = estimateOf("hierarchical", a, view->links);
  EXPECT_NEAR(hierarchical, 2255.0, 0.05 * 2255.0);
  EXPECT_LT(ring, hierarchical);
}

// 16 servers of trn3-ultraserver-gen1 (2,048 ranks, 128 a server, 8 a chip; four copies of
// the description's four servers, the network joining the copies), double binary tree all-reduce of
// 512 KiB: one chunk of 256 KiB a tree. Its edges of a level are few: one child a chip
// (chipSenders) and one a NIC (railSenders), so a level's link is a sender's whole (the chip's
// 2,560 GB/s port, the rail's 25 GB/s), not the 8 ranks' share of it; a parent's second child is
// received while it takes the first, and forwarded as it is reduced, so a level costs a message,
// its latency, one chunk and the other child's reduction. Levels root-most first (edges 1,024 to 1
// apart): three on the network (the third half its pairs within a copy, on its switch: 8.5 us),
// five within a server on the switch (2 us), one half on the chip (1.25 us, the DMA queue's 612.5
// GB/s), two on it (0.5 us). Three climbs (cost.h treeAllReduceTime). trnccl-sim: 285.3 us, rdh 318
// (picked before: the tree estimated 2,567, every rank of a NIC counted on the long edges).
TEST(EstimatesCopies, TreeEdgesAreFewOnAChipAndANic) {
  auto view = describeTopology("trn3-ultraserver-gen1", 2048);
  ASSERT_TRUE(view) << view.status().message();
  const algorithms::LinkModel& m = view->links;
  ASSERT_TRUE(m.multiInstance);
  for (int k = 3; k <= 10; ++k) EXPECT_EQ(m.treePartners[k].chipSenders, 1) << k;
  for (int k = 8; k <= 10; ++k) EXPECT_EQ(m.treePartners[k].railSenders, 1) << k;
  const CollArgs a = call(*view, Collective::kAllReduce, 131072);
  const double chunk = 262144, reduce = 3 * chunk / (m.hbmBandwidth * 1e3);
  struct Level {
    double latency, gbs;
    int fanIn;
  };
  const Level levels[] = {{15, 25, 1},      {15, 25, 2},     {8.5, 25, 2},   {2, 2560, 2},
                          {2, 2560, 2},     {2, 2560, 2},    {2, 2560, 2},   {2, 2560, 2},
                          {1.25, 612.5, 2}, {0.5, 612.5, 2}, {0.5, 612.5, 2}};
  // One chunk a tree (256 KiB of 512 KiB): it climbs with every rank sending at once, then
  // the other tree's climb (waiting for this one's way down there) and its own way down, each
  // level of those forwarding a 64 KiB piece on a link of its own and the second child's chunk
  // after the first's (each level's edges alone on their links here: one a chip and a NIC).
  const double piece = 65536, pieceReduce = 3 * piece / (m.hbmBandwidth * 1e3);
  double climb = 0, again = 0, descent = 0;
  for (const Level& l : levels) {
    climb +=
        m.messageUs + l.latency + std::max(chunk / (l.gbs * 1e3), reduce) + (l.fanIn - 1) * reduce;
    again += m.messageUs + l.latency + std::max(piece / (l.gbs * 1e3), pieceReduce);
    descent += l.fanIn * m.messageUs + l.latency + piece / (l.gbs * 1e3) +
               (l.fanIn - 1) * chunk / (l.gbs * 1e3);
  }
  const double tree = estimateOf("tree", a, m);
  EXPECT_NEAR(tree, climb + std::max(again, descent) + descent, 0.01);
  EXPECT_NEAR(tree, 285.3, 0.15 * 285.3);
  EXPECT_LT(tree, estimateOf("rdh", a, m));
}

// 8 instances of trn2-ultraserver (1,024 ranks, 128 an instance; two copies of the
// description's four, Z rings joining a copy's instances and the network the copies). rdh's
// partners 128 and 256 apart are on another instance of the same copy: one and two Z hops
// (1.5 us each, a NeuronLink's latency), not the network; 512 apart, on the other copy: the
// network (15 us, and the rail's other 7 ranks' messages before, 0.2 us each). Bruck's shift by
// 128 crosses the network only from each copy's last instance (2 pairs in 8). Before, every one of
// these was the network's, and rdh was estimated at 1.4-1.85x its simulated time past one copy.
// trnccl-sim, trn3-ultraserver-gen1 x 8 all-reduce 8 B (the same copies): rdh 62.6 us, the tree
// 123.3; rdh was estimated at 116 and the tree picked (97 % slower).
TEST(EstimatesCopies, RdhPairsOfOneCopyTakeItsFabric) {
  auto view = describeTopology("trn2-ultraserver", 1024);
  ASSERT_TRUE(view) << view.status().message();
  const algorithms::LinkModel& m = view->links;
  ASSERT_TRUE(m.multiInstance);
  ASSERT_EQ(m.fabricInstances, 4);
  EXPECT_EQ(m.xorPartners[7].offInstance, 0);
  EXPECT_EQ(m.xorPartners[8].offInstance, 0);
  EXPECT_EQ(m.xorPartners[9].offInstance, 1);
  EXPECT_EQ(m.shiftPartners[7].offInstance, 2.0 / 8);
  EXPECT_NEAR(algorithms::levelLink(m, m.xorPartners, 7).latencyUs, 1.5, 1e-9);
  EXPECT_NEAR(algorithms::levelLink(m, m.xorPartners, 8).latencyUs, 2 * 1.5, 1e-9);
  EXPECT_NEAR(algorithms::levelLink(m, m.xorPartners, 9).latencyUs, 15 + 7 * 0.2, 1e-9);

  auto gen1 = describeTopology("trn3-ultraserver-gen1", 1024);
  ASSERT_TRUE(gen1) << gen1.status().message();
  const CollArgs a = call(*gen1, Collective::kAllReduce, 2);
  const double rdh = estimateOf("rdh", a, gen1->links);
  EXPECT_NEAR(rdh, 62.6, 0.05 * 62.6);
  EXPECT_LT(rdh, estimateOf("tree", a, gen1->links));
}

// 64 servers of trn3-ultraserver-gen2 (two copies, 36 and 28), hierarchical all-reduce of
// 512 KiB: its columns' tree of 64 rows (a 16 KiB block) crosses the network only on the edges
// joining the two copies, the switch's higher tier on the others. trnccl-sim: 228.5 us (the
// tree 282, which was picked when every column level was priced on the network: 419).
TEST(EstimatesCopies, HierarchyColumnTreeCrossesTheNetworkBetweenCopies) {
  auto view = describeTopology("trn3-ultraserver-gen2", 2048);
  ASSERT_TRUE(view) << view.status().message();
  const CollArgs a = call(*view, Collective::kAllReduce, 131072);
  const double hierarchical = estimateOf("hierarchical", a, view->links);
  EXPECT_NEAR(hierarchical, 228.5, 0.15 * 228.5);
  EXPECT_LT(hierarchical, estimateOf("tree", a, view->links));
}

// 32 servers of trn3-ultraserver-gen2 (1,024 ranks, one copy), hierarchical all-reduce of
// 32 KiB: its columns' tree of 32 rows (a 1 KiB block, one chunk of 512 B a tree) stays on
// the switch's higher tier (3 us, a chip's 320 GB/s over its 8 columns), as the columns' ring
// does. By hand, 5 levels of 0.2 us (a message) + 3 us + 512 B at 40 GB/s: the climb 16.1 us,
// the way down 16.9 (a parent's two children: 0.4 us of messages and two pieces), and the
// chunk climbs tree 0, waits for the later of tree 1's climb and tree 0's way down, comes down
// tree 1: 16.1 + 16.9 + 16.9 = 49.9 us; the instance rows' reduce-scatter and all-gather the
// other 55 us. trnccl-sim: 105.5 us. Before, every level on the network (15 us, about 233 us
// in all), the columns ran the ring (62 steps of the higher tier) and the hierarchy 254.1 us.
TEST(EstimatesCopies, HierarchyColumnTreeWithinOneCopyTakesItsFabric) {
  auto view = describeTopology("trn3-ultraserver-gen2", 1024);
  ASSERT_TRUE(view) << view.status().message();
  ASSERT_FALSE(view->links.multiInstance);
  const CollArgs a = call(*view, Collective::kAllReduce, 8192);
  EXPECT_TRUE(algorithms::hierarchicalInterTree(a, view->links));
  EXPECT_NEAR(estimateOf("hierarchical", a, view->links), 105.5, 0.05 * 105.5);
}

}  // namespace
}  // namespace trnccl::plan
