#include "algorithms/hierarchical.h"

#include "algorithms/grid_compose.h"

namespace trnccl::algorithms {
namespace {

constexpr char kName[] = "hierarchical";
// Rows are instances (intra-instance links), columns rails across them (the network).
using Hierarchical = GridAlgorithm<kName, &Shape::instances, interLink>;

}  // namespace

const Algorithm kHierarchicalAllReduce = Hierarchical::describe(
    "intra reduce-scatter, inter all-reduce, intra all-gather", Hierarchical::allReduce);
const Algorithm kHierarchicalAllGather =
    Hierarchical::describe("inter-instance all-gather first, then intra", Hierarchical::allGather);
const Algorithm kHierarchicalReduceScatter = Hierarchical::describe(
    "intra-instance reduce-scatter first, then inter", Hierarchical::reduceScatter);

}  // namespace trnccl::algorithms
