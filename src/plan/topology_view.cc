#include "plan/topology_view.h"

#include <algorithm>
#include <bit>
#include <cstdlib>

#include "algorithms/patterns.h"
#include "common/env.h"
#include "common/log.h"
#include "topology/fabric_model.h"
#include "topology/layout.h"
#include "topology/loader.h"
#include "topology/rank_box.h"
#include "topology/rings.h"
#include "topology/subgroups.h"

namespace trnccl::plan {
namespace {

algorithms::Grid gridOf(const std::vector<topology::Group>& rows) {
  algorithms::Grid g;
  for (const auto& row : rows) g.rows.push_back(row);
  return g;
}

// Average hops of a direct transfer between the first n ranks (at least 1).
double averageHops(const topology::Topology& topo, const topology::Layout& layout, int n) {
  double hops = 0;
  int pairs = 0;
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

// A direct round among the first n ranks, every rank sending to every other at once, as the
// simulator's fabric routes it: µs per byte of one message on the busiest resource (the pairs
// whose routes cross it, over its bandwidth), and when the round's last message lands without
// its bytes (rank a issues its k-th message, to a + k, at k messageUs; it lands its route's
// latency later). Both 0 when the fabric can't be modelled.
void describeDirect(const topology::Topology& topo, const topology::Layout& layout, int n,
                    algorithms::LinkModel& m) {
  m.directUsPerByte = m.directReachUs = 0;
  auto fabric = topology::FabricModel::build(topo, layout);
  if (!fabric || n < 2) return;
  std::vector<double> load(fabric->resources().size(), 0);
  double reach = 0;
  for (int a = 0; a < n; ++a) {
    for (int k = 1; k < n; ++k) {
      auto path = fabric->route(a, (a + k) % n);
      if (!path) return;
      for (int32_t i = 0; i < path->count; ++i) load[static_cast<size_t>(path->hops[i])] += 1;
      reach = std::max(reach, k * topo.device.messageUs + path->latencyUs);
    }
  }
  double worst = 0;
  for (size_t r = 0; r < load.size(); ++r) {
    worst = std::max(worst, load[r] / fabric->resources()[r].bytesPerUs);
  }
  m.directUsPerByte = worst;
  m.directReachUs = reach;
}

// Hops of the farthest direct transfer between the first n ranks (at least 1).
int farthestHops(const topology::Topology& topo, const topology::Layout& layout, int n) {
  int most = 1;
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      if (auto route = topology::routeBetweenRanks(topo, layout, a, b)) {
        most = std::max(most, route->hops);
      }
    }
  }
  return most;
}

// A ring over the first instance's ranks in rank order (the hierarchy's rows): the average
// latency of the routes of its steps from one chip to the next, wrapping round (0: one chip).
double instanceRingLatency(const topology::Topology& topo, const topology::Layout& layout) {
  const int n = std::min(layout.nranks, layout.ranksPerInstance);
  double latency = 0;
  int steps = 0;
  for (int r = 0; r < n; ++r) {
    auto route = topology::routeBetweenRanks(topo, layout, r, (r + 1) % n);
    if (!route || route->hops == 0) continue;  // the same chip
    latency += route->link.latencyUs;
    ++steps;
  }
  return steps > 0 ? latency / steps : 0;
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

// KangaRing's rings of chips: for the chips of one instance, whole, the description's chip
// rings that step only along chip-to-chip links (topology::instanceChipRings), as indices into
// Shape::chips. Empty when a ring would need a longer route (or there is one chip).
std::vector<std::vector<int>> chipRings(const topology::Topology& topo,
                                        const topology::Layout& layout) {
  const int chips = (layout.nranks + layout.ranksPerChip - 1) / layout.ranksPerChip;
  if (!topo.isTorus() || layout.instances != 1 || chips < 2) return {};
  std::vector<std::vector<int>> rings;
  for (const auto& ring : topology::instanceChipRings(topo, chips)) {
    bool linked = static_cast<int>(ring.size()) == chips;
    for (size_t i = 0; i < ring.size() && linked; ++i) {
      auto route = topology::routeBetween(topo, ring[i], ring[(i + 1) % ring.size()]);
      linked = route && route->hops == 1;
    }
    if (linked) rings.push_back(ring);
  }
  return rings;
}

// The box of ranks along the fabric's dimensions (topology::rankBox), with what one rank gets
// along each when all lines move data at once.
//   torus3d: (X, Y, Z), X being the ring of a torus row's chips with each chip's cores in turn,
//            as torus2d's rows: one line crosses each X link, while the lines of a chip's P
//            cores share its Y and Z links (a row of one chip: X is the chip's cores, on its DMA);
//   switch:  (core, chip, server): a chip's cores share its DMA and HBM, and the lines of its
//            P cores its port and its share of the higher tier (if described).
algorithms::RankDims rankDims(const topology::Topology& topo, const topology::Layout& layout) {
  algorithms::RankDims t;
  auto box = topology::rankBox(topo, layout);
  if (!box) return t;
  const int P = box->sizes[0];
  const topology::LinkSpec chip = topology::onChipLink(topo);
  const double hbm = chip.bandwidthGbps;  // per rank
  auto shared = [&](int size, const topology::LinkSpec& link) {
    return algorithms::RankDims::Dim{size, link.latencyUs, link.bandwidthGbps / P};
  };
  const topology::Fabric& f = topo.fabric;
  if (f.kind == topology::FabricKind::kTorus3d) {
    const int x = box->sizes[1];
    // The line's ring steps from core to core of a chip P - 1 times for each link it crosses.
    const double stepLatency = (f.link.latencyUs + (P - 1) * chip.latencyUs) / P;
    t.dims.push_back(
        {P * x, x > 1 ? stepLatency : chip.latencyUs, x > 1 ? f.link.bandwidthGbps : hbm});
    t.dims.push_back(shared(box->sizes[2], f.link));
    t.dims.push_back(shared(box->sizes[3], *f.zLink));
  } else {
    t.dims.push_back({P, chip.latencyUs, hbm});
    t.dims.push_back(shared(box->sizes[1], f.link));
    t.dims.push_back(shared(box->sizes[2], f.crossLink ? *f.crossLink : f.link));
  }
  t.ranks = box->ranks;
  return t;
}

// The fabric's facts for the cost model beyond one link: the chips' cores, the path between
// instances of one description (Z links, a switch's higher tier), a switch's port sharing.
void describeFabric(const topology::Topology& topo, const topology::Layout& layout,
                    algorithms::LinkModel& m) {
  const topology::LinkSpec chip = topology::onChipLink(topo);  // as the simulator's fabric
  m.chipBandwidth = chip.bandwidthGbps * std::max(1, layout.ranksPerChip);  // per chip
  m.chipLatencyUs = chip.latencyUs;
  m.messageUs = topo.device.messageUs;
  m.hbmBandwidth = topo.device.hbmBandwidthGbps / std::max(1, topo.ranksPerChip());
  m.ranksPerChip = layout.ranksPerChip;
  m.oneChip = layout.nranks <= layout.ranksPerChip;  // the first chip's cores
  m.ranksPerServer = layout.ranksPerInstance;
  m.switched = topo.fabric.kind == topology::FabricKind::kSwitch;
  const bool oneCopy = layout.instances <= layout.descInstances;
  const bool joins = m.switched || topo.fabric.kind == topology::FabricKind::kTorus3d;
  m.multiInstance = layout.instances > 1 && !(oneCopy && joins);
  // Past one copy the network joins the copies, and each copy's fabric its own instances (the
  // simulator's routes, topology::FabricModel::route).
  if (layout.instances > 1 && joins && (oneCopy || layout.descInstances > 1)) {
    const auto& cross = m.switched ? topo.fabric.crossLink : topo.fabric.zLink;
    if (cross) {
      m.crossLatencyUs = cross->latencyUs;
      m.crossBandwidth = cross->bandwidthGbps;
    }
    if (m.multiInstance) m.fabricInstances = layout.descInstances;
  }
}

// The rail facts of the model: one NIC's bandwidth, and how many ranks of one instance share
// the busiest NIC (rails run in parallel; a NIC's ranks split it).
void describeRails(const topology::Topology& topo, const topology::Layout& layout,
                   const std::vector<int>& rails, algorithms::LinkModel& m) {
  const topology::Network& net = *topo.network;
  m.railBandwidth = net.link.bandwidthGbps / std::max(1, net.nics);
  std::vector<int> perNic(static_cast<size_t>(std::max(1, net.nics)), 0);
  for (int r = 0; r < layout.nranks && r < layout.ranksPerInstance; ++r) {
    ++perNic[static_cast<size_t>(rails[static_cast<size_t>(r)])];
  }
  m.ranksPerRail = std::max(1, *std::max_element(perNic.begin(), perNic.end()));
  m.interBandwidth = m.railBandwidth / m.ranksPerRail;
}

// Partners at distance 2^k of every rank at once (algorithms::PartnerLevel), from the routes
// between them: halving/doubling's r ^ 2^k, Bruck's and the binary trees' r + 2^k (mod n).
// The pairs of one level, counted as they come.
struct PairCount {
  int pairs = 0, off = 0, offInstance = 0, crossed = 0;
  double hops = 0, crossHops = 0;
  // byCopy (past one copy of a fabric-joined description): pairs of one copy on different
  // instances take its fabric, as the simulator routes them (FabricModel::route), not the
  // network; they count as off the chip, with their route's hops and Z links (rdh's, Bruck's
  // and the tree's levels alike).
  // The double binary tree's edges (few of a level on an instance; `r` the child): their senders
  // are counted where they share a link: on each chip (its links off the chip) and on each NIC
  // (nicOf: every rank's), children only, since a parent's two children are its fanIn (TreeLevel),
  // received one after the other: PartnerLevel::chipSenders and railSenders, the busiest chip's and
  // NIC's.
  bool treeEdges = false, byCopy = false;
  const std::vector<int>* nicOf = nullptr;
  int nics = 0;  // an instance's NICs (1 + the largest of nicOf)
  std::vector<int> chipEnds, nicEnds;

  // `fabric`: the job's, to count the links between instances a route takes (nullptr: none).
  void add(const topology::Topology& topo, const topology::Layout& layout,
           const topology::FabricModel* fabric, int r, int q) {
    ++pairs;
    auto route = topology::routeBetweenRanks(topo, layout, r, q);
    if (route && route->hops == 0) return;  // the same chip
    ++off;
    if (treeEdges) countEnd(chipEnds, layout, r, layout.place(r).chip, layout.chipsPerInstance);
    hops += route ? route->hops : 1;
    if (layout.place(r).instance == layout.place(q).instance) return;
    // Pairs of one copy take its fabric's cross path (counted below), not the network.
    if (!byCopy || layout.descCopy(r) != layout.descCopy(q)) {
      ++offInstance;
      if (nicOf != nullptr) {
        countEnd(nicEnds, layout, r, (*nicOf)[static_cast<size_t>(r)], nics);
      }
    }
    if (fabric == nullptr) return;
    auto path = fabric->route(r, q);
    if (!path) return;
    const int cpi = std::max(1, topo.chipsPerInstance);
    int links = 0;
    for (int32_t i = 0; i < path->count; ++i) {
      const topology::Resource& res = fabric->resources()[static_cast<size_t>(path->hops[i])];
      if (res.kind == topology::ResourceKind::kLink && res.a / cpi != res.b / cpi) ++links;
    }
    if (links > 0) {
      ++crossed;
      crossHops += links;
    }
  }
  // One more sender on `unit` (of `units` an instance) of rank r's instance.
  static void countEnd(std::vector<int>& ends, const topology::Layout& layout, int r, int unit,
                       int units) {
    ends.resize(static_cast<size_t>(layout.instances * std::max(1, units)));
    ++ends[static_cast<size_t>(layout.place(r).instance * std::max(1, units) + unit)];
  }
  algorithms::PartnerLevel level() const {
    if (pairs == 0) return {};
    algorithms::PartnerLevel l{static_cast<double>(off) / pairs, off > 0 ? hops / off : 0,
                               static_cast<double>(offInstance) / pairs,
                               crossed > 0 ? crossHops / crossed : 0};
    auto busiest = [](const std::vector<int>& ends) {
      return ends.empty() ? 0.0 : static_cast<double>(*std::max_element(ends.begin(), ends.end()));
    };
    l.chipSenders = busiest(chipEnds);
    l.railSenders = busiest(nicEnds);
    return l;
  }
};

void describePartners(const topology::Topology& topo, const topology::Layout& layout,
                      const std::vector<int>& nicOf, algorithms::LinkModel& m) {
  const int n = layout.nranks;
  auto built = topology::FabricModel::build(topo, layout);
  const topology::FabricModel* fabric = built ? &*built : nullptr;
  const bool byCopy = m.multiInstance && m.fabricInstances > 1;
  int k = 0;
  for (; k < algorithms::kPartnerLevels && (1 << k) < n; ++k) {
    PairCount xors, shifts;
    xors.byCopy = shifts.byCopy = byCopy;
    for (int r = 0; r < n; ++r) {
      if (const int q = r ^ (1 << k); q < n) xors.add(topo, layout, fabric, r, q);
      shifts.add(topo, layout, fabric, r, (r + (1 << k)) % n);
    }
    m.xorPartners[static_cast<size_t>(k)] = xors.level();
    m.shiftPartners[static_cast<size_t>(k)] = shifts.level();
  }
  m.partnerLevels = k;
  // The double binary tree's edges (child to parent, both trees), by their length's level.
  std::array<PairCount, algorithms::kPartnerLevels> tree{};
  for (PairCount& level : tree) {
    level.treeEdges = true;
    level.byCopy = byCopy;
    if (m.multiInstance && static_cast<int>(nicOf.size()) == n && n > 0) {
      level.nicOf = &nicOf;
      level.nics = 1 + *std::max_element(nicOf.begin(), nicOf.end());
    }
  }
  for (int t = 0; t < 2; ++t) {
    for (int pos = 0; pos < n; ++pos) {
      const int parent = algorithms::doubleBinaryTree(n, pos, t).parent;
      if (parent < 0) continue;
      const int level = std::bit_width(static_cast<unsigned>(std::abs(pos - parent))) - 1;
      if (level < k) tree[static_cast<size_t>(level)].add(topo, layout, fabric, pos, parent);
    }
  }
  for (int j = 0; j < k; ++j)
    m.treePartners[static_cast<size_t>(j)] = tree[static_cast<size_t>(j)].level();
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
  // The instances of a 3D torus join at same-coordinate chips only: their rows are no 2D torus
  // together (torus3d runs there).
  if (topo->fabric.kind != topology::FabricKind::kTorus3d || layout->instances == 1) {
    shape->torus = gridOf(topology::torusRowGroups(*topo, *layout));
  }
  shape->instances = gridOf(topology::instanceGroups(*layout));
  shape->rings = physicalRings(*topo, *layout, nranks);
  shape->chips = topology::chipGroups(*layout);
  shape->ranksPerChip = layout->ranksPerChip;
  shape->chipRings = chipRings(*topo, *layout);
  shape->switched = topo->fabric.kind == topology::FabricKind::kSwitch &&
                    layout->instances <= layout->descInstances;
  (shape->switched ? shape->switchDims : shape->torus3d) = rankDims(*topo, *layout);
  shape->rails = topology::rankNics(*topo, *layout);

  TopologyView view;
  view.name = topo->name;
  algorithms::LinkModel& m = view.links;
  if (topo->fabric.kind != topology::FabricKind::kNone) {
    m.intraLatencyUs = topo->fabric.link.latencyUs;
    m.intraBandwidth = topo->fabric.link.bandwidthGbps;
  } else {
    const topology::LinkSpec chip = topology::onChipLink(*topo);  // cores of one chip
    m.intraLatencyUs = chip.latencyUs;
    m.intraBandwidth = chip.bandwidthGbps;
  }
  if (topo->network) {
    m.interLatencyUs = topo->network->link.latencyUs;
    describeRails(*topo, *layout, shape->rails, m);
  }
  describeFabric(*topo, *layout, m);
  // A direct round's messages cross the fabric among one instance's ranks, or among all of
  // them where the fabric itself joins the instances (a 3D torus's Z links, a switch's higher
  // tier): there every message is issued by the rank's DMA queue, none by a NIC.
  const int direct =
      m.multiInstance ? std::min(layout->nranks, layout->ranksPerInstance) : layout->nranks;
  m.meshHops = averageHops(*topo, *layout, direct);
  m.meshMaxHops = farthestHops(*topo, *layout, direct);
  describeDirect(*topo, *layout, direct, m);
  m.instanceRingLatencyUs = instanceRingLatency(*topo, *layout);
  describePartners(*topo, *layout, shape->rails, m);
  view.shape = shape;
  view.summary = fmt::format(
      "{}: {} ranks on {} instance(s) x {} ranks, torus grid {}x{}, instance grid {}x{}, "
      "mesh hops {:.2f}, {} physical ring(s), {} rank(s) per EFA rail",
      topo->name, nranks, layout->instances, layout->ranksPerInstance, shape->torus.numRows(),
      shape->torus.numCols(), shape->instances.numRows(), shape->instances.numCols(), m.meshHops,
      shape->rings.size(), m.ranksPerRail);
  view.topology = std::move(topo);
  view.layout = std::move(layout);
  return view;
}

}  // namespace trnccl::plan
