// Rails: each chip's ranks reach other instances through that chip's EFA NIC (the description's
// network.nic_of_chip). The cost model shares a NIC among the ranks of an instance on it, and the
// hierarchy's inter-instance transfers never leave a rank's rail.
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "algorithms/hierarchical.h"
#include "plan/topology_view.h"

namespace trnccl::testing {
namespace {

TEST(Rails, NicPerChipFromTheDescriptions) {
  auto trn1 = plan::describeTopology("trn1.32xlarge", 64);
  ASSERT_TRUE(trn1.isOk()) << trn1.status().message();
  // 8 NICs shared by pairs of chips: ranks 0-3 (chips 0, 1) on NIC 0, 4-7 on NIC 1, ...
  const std::vector<int>& rails = trn1->shape->rails;
  ASSERT_EQ(rails.size(), 64u);
  for (int r = 0; r < 64; ++r) EXPECT_EQ(rails[r], (r % 32) / 4) << "rank " << r;
  EXPECT_EQ(trn1->links.ranksPerRail, 4);
  EXPECT_DOUBLE_EQ(trn1->links.railBandwidth, 12.5);  // 100 GB/s over 8 NICs
  EXPECT_DOUBLE_EQ(trn1->links.interBandwidth, 12.5 / 4);

  auto trn2 = plan::describeTopology("trn2.48xlarge", 256);  // one NIC per chip of 8 ranks
  ASSERT_TRUE(trn2.isOk());
  EXPECT_EQ(trn2->shape->rails[17], 2);
  EXPECT_EQ(trn2->links.ranksPerRail, 8);
  EXPECT_DOUBLE_EQ(trn2->links.railBandwidth, 25);
  auto trn1n = plan::describeTopology("trn1n.32xlarge", 64);  // 16 NICs: one per chip
  ASSERT_TRUE(trn1n.isOk());
  EXPECT_EQ(trn1n->links.ranksPerRail, 2);
}

TEST(Rails, PartlyFilledInstancesShareTheirChipsNics) {
  // 8 ranks per emulated instance sit on 4 chips, so on 2 of the 8 NICs: a rank gets a quarter
  // of one NIC, not an eighth of the instance's 100 GB/s.
  setenv("TRNCCL_EMU_RANKS_PER_NODE", "8", 1);
  auto view = plan::describeTopology("trn1.32xlarge", 32);
  unsetenv("TRNCCL_EMU_RANKS_PER_NODE");
  ASSERT_TRUE(view.isOk()) << view.status().message();
  EXPECT_EQ(view->links.ranksPerRail, 4);
  EXPECT_DOUBLE_EQ(view->links.interBandwidth, 12.5 / 4);
}

// Every transfer of the hierarchy's all-reduce that crosses instances joins two ranks on the
// same rail (same NIC index, same local rank), for a ring and for a tree inter-instance step.
void expectRailAligned(const char* topology, int nranks, size_t count, bool tree) {
  SCOPED_TRACE(::testing::Message() << topology << " " << nranks << " ranks, " << count);
  auto view = plan::describeTopology(topology, nranks);
  ASSERT_TRUE(view.isOk()) << view.status().message();
  const algorithms::Shape& shape = *view->shape;
  std::vector<int> instance(nranks);
  for (int i = 0; i < shape.instances.numRows(); ++i) {
    for (int r : shape.instances.rows[i]) instance[r] = i;
  }
  std::vector<float> buf(count);
  int crossings = 0;
  for (int r = 0; r < nranks; ++r) {
    algorithms::CollArgs a;
    a.count = count;
    a.send = a.recv = buf.data();
    a.rank = r;
    a.nranks = nranks;
    a.shape = view->shape;
    a.links = &view->links;
    ASSERT_EQ(algorithms::hierarchicalInterTree(a, view->links), tree);
    const schedule::Schedule s = algorithms::kHierarchicalAllReduce.build(a);
    for (const schedule::Step& st : s.steps()) {
      for (int peer : {st.sendPeer, st.recvPeer}) {
        if (peer < 0 || instance[peer] == instance[r]) continue;
        ++crossings;
        EXPECT_EQ(shape.rails[peer], shape.rails[r]) << "rank " << r << " peer " << peer;
        EXPECT_EQ(shape.instances.find(peer).second, shape.instances.find(r).second);
      }
    }
  }
  EXPECT_GT(crossings, 0);
}

TEST(Rails, HierarchyCrossesInstancesOnlyAlongRails) {
  expectRailAligned("trn1.32xlarge", 256, 1024, true);             // 8 instances, tree step
  expectRailAligned("trn1.32xlarge", 128, 1024, false);            // 4 instances: a ring
  expectRailAligned("trn1.32xlarge", 128, (64 << 20) / 4, false);  // ring step
  expectRailAligned("trn2.48xlarge", 256, 1024, false);            // 2 instances: a ring
}

}  // namespace
}  // namespace trnccl::testing
