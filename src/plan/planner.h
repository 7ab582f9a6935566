// The planner: picks an algorithm for one call and builds its schedule. Today the choice is the
// first algorithm of the collective's table that supports the call and that TRNCCL_ALGO allows;
// the topology-driven cost model replaces that first-fit with the cheapest estimate.
#pragma once

#include <string>

#include "algorithms/algorithm.h"
#include "common/status.h"

namespace trnccl::plan {

Result<schedule::Schedule> plan(const algorithms::CollArgs& args);

// TRNCCL_ALGO in NCCL's syntax: "ring", "ring,tree", "^ring" (all but), and per collective
// "allreduce:ring;allgather:^ring". Whether `algo` may run for `coll`.
bool algoAllowed(const std::string& spec, const std::string& coll, const std::string& algo);

}  // namespace trnccl::plan
