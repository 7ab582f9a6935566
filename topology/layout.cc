#include "topology/layout.h"

namespace trnccl::topology {

int Layout::rankAt(int instance, int chip, int core) const {
  if (instance < 0 || chip < 0 || core < 0 || core >= ranksPerChip) return -1;
  int local = chip * ranksPerChip + core;
  if (local >= ranksPerInstance) return -1;
  int rank = instance * ranksPerInstance + local;
  return rank < nranks ? rank : -1;
}

int Layout::descChip(int rank) const {
  const RankPlace& p = place(rank);
  return (p.instance % descInstances) * chipsPerInstance + p.chip;
}

Result<Layout> makeLayout(const Topology& topo, int nranks, int ranksPerInstance) {
  if (nranks < 1) return invalidArgument("a layout needs at least one rank, not {}", nranks);
  int capacity = topo.ranksPerInstance();
  if (ranksPerInstance == 0) ranksPerInstance = capacity;
  if (ranksPerInstance < 0 || ranksPerInstance > capacity) {
    return invalidArgument("{} ranks per instance do not fit {} (at most {}: {} chips x {} ranks)",
                           ranksPerInstance, topo.name, capacity, topo.chipsPerInstance,
                           topo.ranksPerChip());
  }
  Layout l;
  l.nranks = nranks;
  l.ranksPerInstance = ranksPerInstance;
  l.ranksPerChip = topo.ranksPerChip();
  l.instances = (nranks + ranksPerInstance - 1) / ranksPerInstance;
  l.chipsPerInstance = topo.chipsPerInstance;
  l.descInstances = topo.instances;
  l.places.reserve(static_cast<size_t>(nranks));
  for (int rank = 0; rank < nranks; ++rank) {
    int local = rank % ranksPerInstance;
    l.places.push_back(
        {rank / ranksPerInstance, local / l.ranksPerChip, local % l.ranksPerChip, local});
  }
  return l;
}

std::optional<Route> routeBetweenRanks(const Topology& topo, const Layout& layout, int a, int b) {
  if (layout.descCopy(a) != layout.descCopy(b)) {
    if (!topo.network) return std::nullopt;
    return Route{topo.network->link, 1};
  }
  return routeBetween(topo, layout.descChip(a), layout.descChip(b));
}

}  // namespace trnccl::topology
