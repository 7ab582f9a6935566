#include "algorithms/torus2d.h"

#include "algorithms/grid_compose.h"

namespace trnccl::algorithms {
namespace {

constexpr char kName[] = "torus2d";
// Rows of the torus are NeuronLinks; so are columns, unless the grid stacks the torus rows of
// several instances, whose columns then cross the network (flatLink).
using Torus2d = GridAlgorithm<kName, &Shape::torus, flatLink>;

}  // namespace

const Algorithm kTorus2dAllReduce = Torus2d::describe(
    "row reduce-scatter, column all-reduce, row all-gather on the torus", Torus2d::allReduce);
const Algorithm kTorus2dAllGather =
    Torus2d::describe("column all-gather, then row all-gathers on the torus", Torus2d::allGather);
const Algorithm kTorus2dReduceScatter = Torus2d::describe(
    "row reduce-scatters, then a column reduce-scatter on the torus", Torus2d::reduceScatter);

}  // namespace trnccl::algorithms
