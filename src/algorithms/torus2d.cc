#include "algorithms/torus2d.h"

#include "algorithms/grid_compose.h"

namespace trnccl::algorithms {
namespace {

constexpr char kName[] = "torus2d";
// Rows of the torus are NeuronLinks; so are columns, unless the grid stacks the torus rows of
// several instances: then a column's ring leaves each instance once, over the network, and
// steps along NeuronLinks in between. Its bandwidth is the network's share (the crossing step
// bounds every step), its latency the average of its steps' (as ringStepLink's for a chip's
// cores), not the network's at every step (2.5x the simulated time at 256 KiB on 2 trn1).
LinkCost columnLink(const CollArgs& a, const LinkModel& m) {
  LinkCost link = flatLink(m);
  const int rows = a.shape ? a.shape->torus.numRows() : 0;
  const int instances = a.shape ? a.shape->instances.numRows() : 0;
  if (!m.multiInstance || withTransports(m) || instances < 2 || rows <= instances) return link;
  link.latencyUs = (instances * link.latencyUs + (rows - instances) * m.intraLatencyUs) / rows;
  // A piece crosses the network at the instances' crossings, NeuronLinks at the other steps
  // (LinkCost::stepBandwidth, as the flat ring across instances).
  link.stepBandwidth =
      rows / (instances / link.bandwidth + (rows - instances) / intraLink(m).bandwidth);
  return link;
}
using Torus2d = GridAlgorithm<kName, &Shape::torus, columnLink>;

}  // namespace

const Algorithm kTorus2dAllReduce = Torus2d::describe(
    "row reduce-scatter, column all-reduce, row all-gather on the torus", Torus2d::allReduce);
const Algorithm kTorus2dAllGather =
    Torus2d::describe("column all-gather, then row all-gathers on the torus", Torus2d::allGather);
const Algorithm kTorus2dReduceScatter = Torus2d::describe(
    "row reduce-scatters, then a column reduce-scatter on the torus", Torus2d::reduceScatter);

}  // namespace trnccl::algorithms
