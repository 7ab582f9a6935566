// Routes of the fabric model over built-in descriptions: what a transfer crosses.
#include "topology/fabric_model.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "topology/layout.h"
#include "topology/loader.h"

namespace trnccl::topology {
namespace {

std::vector<std::string> hops(const FabricModel& f, int from, int to) {
  auto path = f.route(from, to);
  EXPECT_TRUE(path) << path.status().message();
  std::vector<std::string> names;
  for (int i = 0; path && i < path->count; ++i) names.push_back(f.resourceName(path->hops[i]));
  return names;
}

// Trn3 Gen2: servers of 4 chips x 8 ranks on one switch whose higher tier (cross_link, 320 GB/s
// per chip) joins the servers: within a server a transfer takes the ports, across servers the
// tier, at the tier's bandwidth and latency.
TEST(FabricModel, ServersOfASwitchMeetInItsHigherTier) {
  auto topo = loadTopology("trn3-ultraserver-gen2");
  ASSERT_TRUE(topo) << topo.status().message();
  auto layout = makeLayout(*topo, 64);
  ASSERT_TRUE(layout) << layout.status().message();
  auto f = FabricModel::build(*topo, *layout);
  ASSERT_TRUE(f) << f.status().message();
  EXPECT_EQ(hops(*f, 0, 8), (std::vector<std::string>{"switch port 0 up", "switch port 1 down"}));
  EXPECT_EQ(hops(*f, 0, 32), (std::vector<std::string>{"switch tier 0 up", "switch tier 4 down"}));
  auto across = f->route(0, 32);
  ASSERT_TRUE(across);
  EXPECT_DOUBLE_EQ(across->bytesPerUs, topo->fabric.crossLink->bandwidthGbps * 1e3);
  EXPECT_DOUBLE_EQ(across->latencyUs, topo->fabric.crossLink->latencyUs);
}

}  // namespace
}  // namespace trnccl::topology
