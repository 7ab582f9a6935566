// What the communicator takes from its topology description: the rank grids the composite
// algorithms run on (algorithms::Shape), the link facts of the tuner's cost model, and the
// description and rank placement themselves (what trnccl-sim models the fabric from).
#pragma once

#include <memory>
#include <string>

#include "algorithms/algorithm.h"
#include "algorithms/cost.h"
#include "common/status.h"
#include "topology/layout.h"

namespace trnccl::plan {

struct TopologyView {
  std::string name;
  std::shared_ptr<const algorithms::Shape> shape;
  algorithms::LinkModel links;
  std::string summary;  // one line for INFO
  std::shared_ptr<const topology::Topology> topology;
  std::shared_ptr<const topology::Layout> layout;
};

// Places nranks ranks on `topo` with TRNCCL_EMU_RANKS_PER_NODE ranks per instance (unset or 0:
// the description's).
Result<topology::Layout> layoutFromEnv(const topology::Topology& topo, int nranks);

// Loads the description (built-in name or YAML path) and places nranks ranks on it
// (TRNCCL_EMU_RANKS_PER_NODE applies).
Result<TopologyView> describeTopology(const std::string& nameOrPath, int nranks);
// The view of nranks ranks placed on `topo` with ranksPerInstance ranks per instance (0: the
// description's), as a job of several instances of it sees it (trnccl-sim --instances).
Result<TopologyView> viewTopology(const topology::Topology& topo, int nranks,
                                  int ranksPerInstance = 0);

}  // namespace trnccl::plan
