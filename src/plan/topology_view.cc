#include "plan/topology_view.h"

#include <algorithm>

#include "common/env.h"
#include "common/log.h"
#include "topology/layout.h"
#include "topology/loader.h"
#include "topology/rings.h"
#include "topology/subgroups.h"

namespace trnccl::plan {
namespace {

algorithms::Grid gridOf(const std::vector<topology::Group>& rows) {
  algorithms::Grid g;
  for (const auto& row : rows) g.rows.push_back(row);
  return g;
}

// Average hops of a direct transfer between ranks of one instance (at least 1).
double averageHops(const topology::Topology& topo, const topology::Layout& layout) {
  double hops = 0;
  int pairs = 0;
  const int n = std::min(layout.nranks, layout.ranksPerInstance);
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      if (auto route = topology::routeBetweenRanks(topo, layout, a, b)) {
        hops += std::max(1, route->hops);
        ++pairs;
      }
    }
  }
  return pairs > 0 ? hops / pairs : 1.0;
}

// The topology's rank rings, the candidates for Shape::rings (algorithms::channelRings picks the
// channels among them): each must be a permutation of 0..nranks-1, else none is kept and the
// ring algorithms keep the natural order. Every other ring runs backwards: the cores of a chip
// are consecutive in every ring, so forward rings would share the directed same-chip steps
// (one connection direction, which two concurrent channels can't both use); reversed, ring 1
// still steps only along its own physical links, now the other way round.
std::vector<std::vector<int>> physicalRings(const topology::Topology& topo,
                                            const topology::Layout& layout, int nranks) {
  auto rings = topology::rankRings(topo, layout);
  for (size_t i = 0; i < rings.size(); ++i) {
    std::vector<int> sorted = rings[i];
    std::sort(sorted.begin(), sorted.end());
    for (int r = 0; r < nranks; ++r) {
      if (static_cast<int>(sorted.size()) != nranks || sorted[r] != r) return {};
    }
    if (i % 2 == 1) std::reverse(rings[i].begin(), rings[i].end());
  }
  return rings;
}

// What joins the job's instances, per rank when every rank crosses at once: within one copy of
// an UltraServer description its own fabric (the Z links of a torus3d, the switch), each chip's
// link shared by the chip's ranks; otherwise EFA, the instance's shared by its ranks.
void setInterLink(const topology::Topology& topo, const topology::Layout& layout,
                  algorithms::LinkModel& m) {
  const bool oneCopy = layout.instances <= topo.instances;
  const int perChip = std::max(1, topo.ranksPerChip());
  if (oneCopy && topo.fabric.kind == topology::FabricKind::kTorus3d) {
    m.interLatencyUs = topo.fabric.zLink->latencyUs;
    m.interBandwidth = topo.fabric.zLink->bandwidthGbps / perChip;
  } else if (oneCopy && topo.fabric.kind == topology::FabricKind::kSwitch) {
    m.interLatencyUs = topo.fabric.link.latencyUs;
    m.interBandwidth = topo.fabric.link.bandwidthGbps / perChip;
  } else if (topo.network) {
    m.interLatencyUs = topo.network->link.latencyUs;
    m.interBandwidth = topo.network->link.bandwidthGbps / std::max(1, layout.ranksPerInstance);
  }
}

// TRNCCL_EMU_RANKS_PER_NODE: ranks per emulated instance (0: unset, the description's).
int emuRanksPerInstance(const topology::Topology& topo, int nranks) {
  int64_t k = env::getInt("TRNCCL_EMU_RANKS_PER_NODE", 0);
  if (k <= 0) return 0;
  TRN_INFO(kInit, "TRNCCL_EMU_RANKS_PER_NODE={}: {} ranks as instances of {} on {}", k, nranks, k,
           topo.name);
  return static_cast<int>(k);
}

}  // namespace

Result<topology::Layout> layoutFromEnv(const topology::Topology& topo, int nranks) {
  return topology::makeLayout(topo, nranks, emuRanksPerInstance(topo, nranks));
}

Result<TopologyView> describeTopology(const std::string& nameOrPath, int nranks) {
  auto topo = topology::loadTopology(nameOrPath);
  if (!topo) return topo.status();
  return viewTopology(*topo, nranks, emuRanksPerInstance(*topo, nranks));
}

Result<TopologyView> viewTopology(const topology::Topology& topoIn, int nranks,
                                  int ranksPerInstance) {
  auto layoutOr = topology::makeLayout(topoIn, nranks, ranksPerInstance);
  if (!layoutOr) return layoutOr.status();
  auto topo = std::make_shared<const topology::Topology>(topoIn);
  auto layout = std::make_shared<const topology::Layout>(std::move(*layoutOr));
  auto shape = std::make_shared<algorithms::Shape>();
  shape->torus = gridOf(topology::torusRowGroups(*topo, *layout));
  shape->instances = gridOf(topology::instanceGroups(*layout));
  shape->rings = physicalRings(*topo, *layout, nranks);

  TopologyView view;
  view.name = topo->name;
  algorithms::LinkModel& m = view.links;
  if (topo->fabric.kind != topology::FabricKind::kNone) {
    m.intraLatencyUs = topo->fabric.link.latencyUs;
    m.intraBandwidth = topo->fabric.link.bandwidthGbps;
  } else {
    m.intraLatencyUs = topology::kOnChipLatencyUs;  // cores of one chip: on-chip DMA
    m.intraBandwidth = topo->device.hbmBandwidthGbps;
  }
  setInterLink(*topo, *layout, m);
  m.multiInstance = layout->instances > 1;
  m.meshHops = averageHops(*topo, *layout);
  view.shape = shape;
  view.summary = fmt::format(
      "{}: {} ranks on {} instance(s) x {} ranks, torus grid {}x{}, instance grid {}x{}, "
      "mesh hops {:.2f}, {} physical ring(s)",
      topo->name, nranks, layout->instances, layout->ranksPerInstance, shape->torus.numRows(),
      shape->torus.numCols(), shape->instances.numRows(), shape->instances.numCols(), m.meshHops,
      shape->rings.size());
  view.topology = std::move(topo);
  view.layout = std::move(layout);
  return view;
}

}  // namespace trnccl::plan
