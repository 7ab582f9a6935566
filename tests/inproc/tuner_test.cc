// The tuner's choices per topology and size, from the cost model over the built-in
// descriptions (docs/ALGORITHMS.md lists the same table).
#include <gtest/gtest.h>

#include <string>

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

TEST(Tuner, Trn1WholeTorus) {
  auto view = plan::describeTopology("trn1.32xlarge", 32);
  ASSERT_TRUE(view.isOk()) << view.status().message();
  EXPECT_EQ(view->shape->torus.numRows(), 4);
  EXPECT_EQ(view->shape->torus.numCols(), 8);
  using algorithms::Collective;
  EXPECT_EQ(chosen(*view, Collective::kAllReduce, 32, 1024), "mesh");
  // Two edge-disjoint physical rings: the 2-channel ring has twice a torus row's links.
  EXPECT_EQ(chosen(*view, Collective::kAllReduce, 32, 2 << 20), "rdh");
  // All-gather counts are per rank: 64 KiB each gathers 2 MiB.
  EXPECT_EQ(chosen(*view, Collective::kAllGather, 32, 64 << 10), "torus2d");
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
  // Two chips, one hop apart: halving/doubling moves the ring's bytes in fewer steps.
  EXPECT_EQ(chosen(*view, Collective::kAllReduce, 4, 256 << 20), "rdh");
  EXPECT_EQ(chosen(*view, Collective::kAllGather, 4, 256 << 20), "ring");
}

TEST(Tuner, ForcedAlgorithmWinsAndUnsupportedFallsBack) {
  auto view = plan::describeTopology("trn1.32xlarge", 32);
  ASSERT_TRUE(view.isOk());
  setenv("TRNCCL_ALGO", "allreduce:ring", 1);
  EXPECT_EQ(chosen(*view, algorithms::Collective::kAllReduce, 32, 1024), "ring");
  EXPECT_EQ(chosen(*view, algorithms::Collective::kAllGather, 32, 64 << 10), "torus2d");
  setenv("TRNCCL_ALGO", "^mesh,torus2d", 1);
  EXPECT_EQ(chosen(*view, algorithms::Collective::kAllReduce, 32, 1024), "rdh");
  setenv("TRNCCL_ALGO", "hierarchical", 1);  // one instance: declined, tuner falls back
  EXPECT_NE(chosen(*view, algorithms::Collective::kAllReduce, 32, 1024), "hierarchical");
  unsetenv("TRNCCL_ALGO");
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
