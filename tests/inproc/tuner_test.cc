// The tuner's choices per topology and size, from the cost model over the built-in
// descriptions (docs/ALGORITHMS.md lists the same table).
#include <gtest/gtest.h>

#include <string>

#include "algorithms/hierarchical.h"
#include "plan/planner.h"
#include "plan/topology_view.h"

namespace trnccl::testing {
namespace {

std::string chosen(const plan::TopologyView& view, algorithms::Collective coll, int nranks,
                   size_t bytes) {
  algorithms::CollArgs a;
  a.coll = coll;
  a.type = device::DataType::kFloat32;
  a.count = bytes / 4;
  a.nranks = nranks;
  a.sliceBytes = 256 * 1024;
  a.shape = view.shape;
  auto c = plan::choose(a, view.links);
  EXPECT_TRUE(c.isOk()) << c.status().message();
  return c ? c->algorithm->name : "";
}

// Whether the hierarchy's all-reduce of `bytes` crosses the instances on its tree.
bool interTree(const plan::TopologyView& view, int nranks, size_t bytes) {
  algorithms::CollArgs a;
  a.coll = algorithms::Collective::kAllReduce;
  a.count = bytes / 4;
  a.nranks = nranks;
  a.sliceBytes = 256 * 1024;
  a.shape = view.shape;
  return algorithms::hierarchicalInterTree(a, view.links);
}

TEST(Tuner, Trn1WholeTorus) {
  auto view = plan::describeTopology("trn1.32xlarge", 32);
  ASSERT_TRUE(view.isOk()) << view.status().message();
  EXPECT_EQ(view->shape->torus.numRows(), 4);
  EXPECT_EQ(view->shape->torus.numCols(), 8);
  using algorithms::Collective;
  // Small sizes: mesh, the simulator's fastest (18.9 us against rdh's 21.1): its round lasts
  // until the last of its 31 messages lands, not the farthest issued last.
  EXPECT_EQ(chosen(*view, Collective::kAllReduce, 32, 1024), "mesh");
  // Two edge-disjoint physical rings: the 2-channel ring has twice a torus row's links.
  EXPECT_EQ(chosen(*view, Collective::kAllReduce, 32, 2 << 20), "torus2d");
  // All-gather counts are per rank: 64 KiB each gathers 2 MiB; mesh, the simulator's fastest.
  EXPECT_EQ(chosen(*view, Collective::kAllGather, 32, 64 << 10), "mesh");
  // Large all-reduce: the 2-channel ring, the simulator's fastest (817 us; kangaring 825).
  EXPECT_EQ(chosen(*view, Collective::kAllReduce, 32, 64 << 20), "ring");
  EXPECT_EQ(chosen(*view, Collective::kAllGather, 32, 64 << 20), "ring");
  EXPECT_EQ(chosen(*view, Collective::kBroadcast, 32, 64 << 20), "chain");
}

TEST(Tuner, SmallCommunicatorUsesFlatAlgorithms) {
  auto view = plan::describeTopology("trn1.32xlarge", 4);
  ASSERT_TRUE(view.isOk());
  EXPECT_FALSE(view->shape->torus.usable(4));  // 2 chips: one torus row
  using algorithms::Collective;
  EXPECT_EQ(chosen(*view, Collective::kAllReduce, 4, 1024), "mesh");
  // Two whole chips, one link apart: their primaries send half what halving/doubling sends
  // over it, in fewer steps than the ring of four ranks.
  // Large: the ring, the simulator's fastest (kangaring's lockstep groups cost more).
  EXPECT_EQ(chosen(*view, Collective::kAllReduce, 4, 256 << 20), "ring");
  EXPECT_EQ(chosen(*view, Collective::kAllGather, 4, 256 << 20), "ring");
}

// The fabrics' own algorithms (issue 16), on whole instances and UltraServers: small sizes go
// to the direct algorithms, large ones to the fabric's composition. All-gather and
// reduce-scatter counts are per rank.
TEST(Tuner, KangaRingOnWholeChipsOfATorus) {
  using algorithms::Collective;
  auto trn1 = plan::describeTopology("trn1.32xlarge", 16);  // 8 chips: one ring of chips
  ASSERT_TRUE(trn1.isOk()) << trn1.status().message();
  EXPECT_EQ(trn1->shape->chipRings.size(), 1u);
  // mesh: the simulator's fastest at 1 KiB (12.5 us against rdh's 14.6).
  EXPECT_EQ(chosen(*trn1, Collective::kAllReduce, 16, 1024), "mesh");
  // ring: the simulator's fastest at 256 MiB (6,089 us against torus2d's 6,566; torus2d was
  // picked until the ring's reduce steps were charged a piece's transfer and reduction one
  // after the other, as the executor forwards it).
  EXPECT_EQ(chosen(*trn1, Collective::kAllReduce, 16, 256 << 20), "ring");
  auto trn2 = plan::describeTopology("trn2.48xlarge", 128);  // 16 chips of 8 ranks: two rings
  ASSERT_TRUE(trn2.isOk()) << trn2.status().message();
  EXPECT_EQ(trn2->shape->chipRings.size(), 2u);
  EXPECT_EQ(chosen(*trn2, Collective::kAllReduce, 128, 1024), "rdh");
  // The two-channel ring, the simulator's fastest (eight ranks a chip: long chains).
  EXPECT_EQ(chosen(*trn2, Collective::kAllReduce, 128, 256 << 20), "ring");
}

TEST(Tuner, Torus3dOnTheTrn2UltraServer) {
  using algorithms::Collective;
  auto view = plan::describeTopology("trn2-ultraserver", 512);
  ASSERT_TRUE(view.isOk()) << view.status().message();
  EXPECT_EQ(view->shape->torus3d.activeDims(), 3);  // X (a row's chips and cores), Y, Z
  EXPECT_FALSE(view->shape->torus.usable(512));     // instances are no 2D torus together
  EXPECT_EQ(chosen(*view, Collective::kAllReduce, 512, 1024), "rdh");
  EXPECT_EQ(chosen(*view, Collective::kAllReduce, 512, 16 << 20), "torus3d");
  // The 2-channel ring at 128 MiB: the simulator's fastest (1,763 us; torus3d 2,077).
  EXPECT_EQ(chosen(*view, Collective::kAllReduce, 512, 128 << 20), "ring");
  EXPECT_EQ(chosen(*view, Collective::kAllGather, 512, 64 << 10), "torus3d");
  EXPECT_EQ(chosen(*view, Collective::kReduceScatter, 512, 64 << 10), "torus3d");
}

TEST(Tuner, NeuronSwitchOnTrn3UltraServers) {
  using algorithms::Collective;
  auto gen1 = plan::describeTopology("trn3-ultraserver-gen1", 512);
  ASSERT_TRUE(gen1.isOk()) << gen1.status().message();
  // Small sizes: twotier's rounds issue fewer messages each (a server's chips, then the
  // servers) than twoshot's across all chips; the simulator's fastest too.
  EXPECT_EQ(chosen(*gen1, Collective::kAllReduce, 512, 64), "twotier");
  // twotier, at or below twoshot in the simulator (150 and 1,052 us against 157 and 1,057).
  EXPECT_EQ(chosen(*gen1, Collective::kAllReduce, 512, 16 << 20), "twotier");
  EXPECT_EQ(chosen(*gen1, Collective::kAllReduce, 512, 128 << 20), "twotier");
  // Gen2's 36 servers of 4 chips: above a few hundred KiB the heavy traffic stays in a server.
  auto gen2 = plan::describeTopology("trn3-ultraserver-gen2", 1152);
  ASSERT_TRUE(gen2.isOk()) << gen2.status().message();
  EXPECT_EQ(chosen(*gen2, Collective::kAllReduce, 1152, 8), "twotier");
  EXPECT_EQ(chosen(*gen2, Collective::kAllReduce, 1152, 64 << 10), "twotier");
  EXPECT_EQ(chosen(*gen2, Collective::kAllReduce, 1152, 16 << 20), "twotier");
  EXPECT_EQ(chosen(*gen2, Collective::kAllReduce, 1152, 1 << 30), "twotier");
}

TEST(Tuner, ForcedAlgorithmWinsAndUnsupportedFallsBack) {
  auto view = plan::describeTopology("trn1.32xlarge", 32);
  ASSERT_TRUE(view.isOk());
  setenv("TRNCCL_ALGO", "allreduce:ring", 1);
  EXPECT_EQ(chosen(*view, algorithms::Collective::kAllReduce, 32, 1024), "ring");
  EXPECT_EQ(chosen(*view, algorithms::Collective::kAllGather, 32, 64 << 10), "mesh");
  setenv("TRNCCL_ALGO", "^mesh,torus2d", 1);
  EXPECT_EQ(chosen(*view, algorithms::Collective::kAllReduce, 32, 1024), "rdh");
  setenv("TRNCCL_ALGO", "hierarchical", 1);  // one instance: declined, tuner falls back
  EXPECT_NE(chosen(*view, algorithms::Collective::kAllReduce, 32, 1024), "hierarchical");
  unsetenv("TRNCCL_ALGO");
}

// At scale the inter-instance latency dominates small and medium messages: 64 instances of
// trn1.32xlarge (2048 ranks) take the double binary tree for small all-reduces (11 levels, 7 of
// them across instances, instead of a ring's 4094 steps), the hierarchy with a tree across the
// instances for medium ones and a ring across them for the largest, and Bruck's log2 n steps
// for small all-gathers and reduce-scatters.
TEST(Tuner, TreesAndBruckAtScale) {
  auto view = plan::describeTopology("trn1.32xlarge", 2048);
  ASSERT_TRUE(view.isOk()) << view.status().message();
  ASSERT_EQ(view->shape->instances.numRows(), 64);
  using algorithms::Collective;
  EXPECT_EQ(chosen(*view, Collective::kAllReduce, 2048, 1024), "rdh");
  EXPECT_EQ(chosen(*view, Collective::kAllReduce, 2048, 4 << 20), "hierarchical");
  EXPECT_TRUE(interTree(*view, 2048, 4 << 20));
  EXPECT_EQ(chosen(*view, Collective::kAllReduce, 2048, 1 << 30), "hierarchical");
  EXPECT_FALSE(interTree(*view, 2048, 1 << 30));
  // Per-rank counts: 16 B each gathers 32 KiB, 64 KiB each 128 MiB.
  EXPECT_EQ(chosen(*view, Collective::kAllGather, 2048, 16), "bruck");
  EXPECT_EQ(chosen(*view, Collective::kReduceScatter, 2048, 16), "bruck");
  EXPECT_EQ(chosen(*view, Collective::kAllGather, 2048, 64 << 10), "hierarchical");
  EXPECT_EQ(chosen(*view, Collective::kReduceScatter, 2048, 64 << 10), "hierarchical");
}

// Two trn2.48xlarge (256 ranks): a small all-reduce climbs the tree (two of its eight levels
// cross the network); a large one runs the hierarchy, a ring across the two instances.
TEST(Tuner, TwoTrn2Instances) {
  auto view = plan::describeTopology("trn2.48xlarge", 256);
  ASSERT_TRUE(view.isOk()) << view.status().message();
  using algorithms::Collective;
  EXPECT_EQ(chosen(*view, Collective::kAllReduce, 256, 1024), "rdh");
  EXPECT_EQ(chosen(*view, Collective::kAllReduce, 256, 64 << 20), "hierarchical");
  EXPECT_FALSE(interTree(*view, 256, 64 << 20));
  EXPECT_EQ(chosen(*view, Collective::kAllGather, 256, 1 << 20), "hierarchical");
}

TEST(Tuner, AlgoSpecSyntax) {
  EXPECT_TRUE(plan::algoAllowed("", "allreduce", "ring"));
  EXPECT_TRUE(plan::algoAllowed("ring,mesh", "allreduce", "mesh"));
  EXPECT_FALSE(plan::algoAllowed("^ring", "allgather", "ring"));
  EXPECT_TRUE(plan::algoAllowed("allreduce:ring;allgather:mesh", "allgather", "mesh"));
  EXPECT_FALSE(plan::algoAllowed("allreduce:ring;allgather:mesh", "allreduce", "mesh"));
  EXPECT_TRUE(plan::algoAllowed("allreduce:ring", "broadcast", "chain"));
}

}  // namespace
}  // namespace trnccl::testing
