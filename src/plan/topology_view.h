// What the communicator takes from its topology description: the rank grids the composite
// algorithms run on (algorithms::Shape) and the link facts of the tuner's cost model.
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
};

// Places nranks ranks on `topo` with TRNCCL_EMU_RANKS_PER_NODE ranks per instance (unset or 0:
// the description's).
Result<topology::Layout> layoutFromEnv(const topology::Topology& topo, int nranks);

// Loads the description (built-in name or YAML path) and places nranks ranks on it
// (TRNCCL_EMU_RANKS_PER_NODE applies).
Result<TopologyView> describeTopology(const std::string& nameOrPath, int nranks);

}  // namespace trnccl::plan
