// What the communicator takes from its topology description: the rank grids the composite
// algorithms run on (algorithms::Shape) and the link facts of the tuner's cost model.
#pragma once

#include <memory>
#include <string>

#include "algorithms/algorithm.h"
#include "common/status.h"
#include "plan/cost_model.h"

namespace trnccl::comm {

struct TopologyView {
  std::string name;
  std::shared_ptr<const algorithms::Shape> shape;
  plan::LinkModel links;
  std::string summary;  // one line for INFO
};

// Loads the description (built-in name or YAML path) and places nranks ranks on it
// (TRNCCL_EMU_RANKS_PER_NODE applies).
Result<TopologyView> describeTopology(const std::string& nameOrPath, int nranks);

}  // namespace trnccl::comm
