// The all-reduce's inter-instance step, chosen by the cost model: each column all-reduces its
// block of S/C bytes across the R instances over its rail, as a ring (2(R-1) network steps of
// S/(RC)) or as a double binary tree (2 ceil(log2 R) levels, pipelined in slices). The tree wins
// at scale for small and medium sizes (64 instances: 12 levels instead of 126 steps); the ring
// keeps a few instances (two, where the trees are one link; four on trn1) and the largest sizes,
// where the tree's pipeline fill costs more than the ring's extra steps. Estimate and build decide
// alike, from the same model (CollArgs::links when building), so every rank builds the same step.
#include "algorithms/hierarchical.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <vector>

#include "algorithms/allreduce/tree.h"
#include "algorithms/grid_compose.h"

namespace trnccl::algorithms {
namespace {

constexpr char kName[] = "hierarchical";
// Rows are instances, their ranks in rank order, so a row's ring steps between chips in number
// order, not all neighbours: its chip's step takes the ring's average route latency
// (LinkModel::instanceRingLatencyUs), and a piece crosses its core steps at the rank's DMA rate,
// its chip steps at the link's (stepBandwidth, their average over a chip's ranks). With
// transports intraLink, the form their terms were measured against. Columns are rails across
// the instances (the network).
LinkCost instanceRingLink(const LinkModel& m) {
  LinkCost link = intraLink(m);
  if (withTransports(m)) return link;
  if (m.instanceRingLatencyUs > 0) link.latencyUs = m.instanceRingLatencyUs;
  const int perChip = std::max(1, m.ranksPerChip);
  link.stepBandwidth = perChip / (1 / link.bandwidth + (perChip - 1) / dmaLink(m).bandwidth);
  // A rank's own slice leaves through its DMA queue, whatever link it then takes: a port or
  // NeuronLink wider than the queue does not speed the ring's slowest rank.
  if (perChip > 1) link.bandwidth = std::min(link.bandwidth, dmaLink(m).bandwidth);
  return link;
}
// A rail's NIC serves the messages of its instance's ranks (a column each) one after another,
// each at the NIC's rate: their bytes bound a ring's step (the rank's share), but a rank's piece
// crosses at the NIC's rate when its turn comes (stepBandwidth), so where the network's latency
// is longer than the rail's turn, a step costs the latency and one piece, not every rank's.
// Where the fabric joins the instances (a torus's Z links, a switch's higher tier), the columns
// take that path, not the network: a column's rank shares its chip's link with the chip's
// other columns (each crossing at once), a piece crossing at the link's rate.
// Past one copy of such a description (fabricInstances), a column's ring crosses the network
// once per copy and the fabric between the copy's instances: its latency and a piece's rate
// their average over the column's steps, its bandwidth the slower path's.
LinkCost fabricColumnLink(const LinkModel& m) {
  LinkCost link = crossLink(m);
  link.stepBandwidth = link.bandwidth;
  link.bandwidth /= std::max(1, m.ranksPerChip);
  return link;
}
LinkCost railLink(const CollArgs& a, const LinkModel& m) {
  if (withTransports(m)) return interLink(m);
  if (!m.multiInstance && m.crossBandwidth > 0) return fabricColumnLink(m);
  LinkCost link = interLink(m);
  link.stepBandwidth = m.railBandwidth;
  const int instances = a.shape != nullptr ? a.shape->instances.numRows() : 1;
  const int copies = descriptionCopies(m, instances);
  if (copies >= instances) return link;
  const LinkCost fabric = fabricColumnLink(m);
  const double net = copies / static_cast<double>(instances), joined = 1 - net;
  return {net * link.latencyUs + joined * fabric.latencyUs,
          std::min(link.bandwidth, fabric.bandwidth), 1,
          1 / (net / link.stepBandwidth + joined / fabric.stepBandwidth)};
}
using Hierarchical = GridAlgorithm<kName, &Shape::instances, railLink, instanceRingLink>;

struct InterStep {
  bool tree;
  double us;
};

InterStep interStep(const CollArgs& a, const LinkModel& m) {
  const Grid& g = Hierarchical::grid(a);
  const double block = totalBytes(a) / g.numCols();
  const LinkCost net = interLink(m);
  // The fused ring all-reduce, pipelined as the grid's columns (with transports, the unpipelined
  // phases their terms were measured against).
  const double ring =
      withTransports(m)
          ? ringReducePhase(g.numRows(), block, net, m) + ringPhase(g.numRows(), block, net)
          : pipelinedRingAllReduce(a, m, g.numRows(), block, railLink(a, m));
  // Past one copy of a fabric-joined description the column's tree takes the network only on
  // its edges that join two copies, the copy's fabric on the others (a level's latency by
  // their shares): every level the network made it 1.84x simulated on 64
  // trn3-ultraserver-gen2 servers at 512 KiB (two copies). Within one copy every edge is the
  // copy's fabric (as the column's ring, railLink); one copy a row (fabricInstances 1): every
  // level the network.
  const int rows = g.numRows(), depth = treeDepth(rows);
  std::vector<double> edges(static_cast<size_t>(depth) + 1, 0), crossing(edges);
  const bool byCopy = m.multiInstance && m.fabricInstances > 1 && !withTransports(m);
  const bool withinCopy = !m.multiInstance && m.crossBandwidth > 0 && !withTransports(m);
  for (int t = 0; byCopy && t < 2; ++t) {
    for (int pos = 0; pos < rows; ++pos) {
      const int parent = doubleBinaryTree(rows, pos, t).parent;
      if (parent < 0) continue;
      const int length = std::bit_width(static_cast<unsigned>(std::abs(pos - parent))) - 1;
      const size_t level = static_cast<size_t>(std::clamp(depth - length, 0, depth));
      edges[level] += 1;
      if (descriptionCopyOf(m, pos) != descriptionCopyOf(m, parent)) crossing[level] += 1;
    }
  }
  const LinkCost fabric = fabricColumnLink(m);
  auto levelOf = [&](int level) {
    const size_t l = static_cast<size_t>(level);
    if (withinCopy) return fabric;
    if (!byCopy || edges[l] == 0) return net;
    const double share = crossing[l] / edges[l];  // a level's latency by its edges' shares
    if (share == 0) return fabric;
    return LinkCost{share * net.latencyUs + (1 - share) * fabric.latencyUs,
                    std::min(net.bandwidth, fabric.bandwidth), net.sharers};
  };
  const double tree = treeAllReduceTime(block, static_cast<double>(a.sliceBytes),
                                        allreduce::treeLevels(rows, levelOf), m);
  return tree < ring ? InterStep{true, tree} : InterStep{false, ring};
}

// The rows' reduce-scatter and all-gather are pipelined rings over the instance's whole chips,
// as the grid compositions' rows (gridEstimate), around the inter-instance step.
double allReduceEstimate(const CollArgs& a, const LinkModel& m) {
  const int C = Hierarchical::grid(a).numCols();
  if (withTransports(m)) {  // the form the transport terms were measured against
    return ringReducePhase(C, totalBytes(a), intraLink(m), m) +
           ringPhase(C, totalBytes(a), intraLink(m)) + interStep(a, m).us;
  }
  const LinkCost row = ringStepLink(m, instanceRingLink(m));
  return pipelinedRingPhase(a, m, C, totalBytes(a), row, true) +
         pipelinedRingPhase(a, m, C, totalBytes(a), row, false) + interStep(a, m).us;
}

schedule::Schedule allReduce(const CollArgs& a) {
  const LinkModel defaults;
  const bool tree = interStep(a, a.links != nullptr ? *a.links : defaults).tree;
  return gridAllReduce(a, Hierarchical::grid(a), kName,
                       tree ? allreduce::treeAllReduce : ringAllReduce);
}

const char* interStepName(const CollArgs& a, const LinkModel& m) {
  return interStep(a, m).tree ? "tree" : "ring";
}

}  // namespace

bool hierarchicalInterTree(const CollArgs& a, const LinkModel& m) { return interStep(a, m).tree; }

const Algorithm kHierarchicalAllReduce = {
    .name = kName,
    .description =
        "intra reduce-scatter, inter all-reduce per rail (ring or tree), intra all-gather",
    .supports = Hierarchical::supports,
    .estimate = allReduceEstimate,
    .usesChannels = false,
    .build = allReduce,
    .variant = interStepName,
};
const Algorithm kHierarchicalAllGather =
    Hierarchical::describe("inter-instance all-gather first, then intra", Hierarchical::allGather);
const Algorithm kHierarchicalReduceScatter = Hierarchical::describe(
    "intra-instance reduce-scatter first, then inter", Hierarchical::reduceScatter);

}  // namespace trnccl::algorithms
