// The Simulator's calls (src/sim/simulate.h) build what the library builds.
#include <gtest/gtest.h>

#include "algorithms/hierarchical.h"
#include "plan/topology_view.h"
#include "sim/simulate.h"

namespace trnccl::sim {
namespace {

// plan::plan builds a schedule on the model's links (CollArgs::links), and a builder that picks
// a variant by the cost model (the hierarchy's inter-instance step) picks by them; the simulator
// built on the defaults instead. 8 x trn1.32xlarge, hierarchical all-reduce of 4 MiB: the
// model's links choose the ring between instances (a rail's 4 ranks take turns at its NIC), the
// defaults the tree. trnccl-sim: 362.4 us with the ring, 388.6 with the tree (before).
TEST(Simulator, BuildsOnTheModelsLinksAsTheLibrary) {
  auto view = plan::describeTopology("trn1.32xlarge", 256);
  ASSERT_TRUE(view) << view.status().message();
  auto sim = Simulator::create(*view);
  ASSERT_TRUE(sim) << sim.status().message();
  algorithms::CollArgs args;
  args.coll = algorithms::Collective::kAllReduce;
  args.count = 1 << 20;
  args.nranks = 256;
  args.shape = view->shape;
  ASSERT_FALSE(algorithms::hierarchicalInterTree(args, view->links));
  ASSERT_TRUE(algorithms::hierarchicalInterTree(args, algorithms::LinkModel{}));
  const algorithms::Algorithm* hierarchical =
      findAlgorithm(algorithms::Collective::kAllReduce, "hierarchical");
  ASSERT_NE(hierarchical, nullptr);
  auto run = sim->collective(args, hierarchical);
  ASSERT_TRUE(run) << run.status().message();
  EXPECT_NEAR(run->outcome.timeUs, 362.4, 1.0);
}

}  // namespace
}  // namespace trnccl::sim
