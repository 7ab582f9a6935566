#include "topology/rings.h"

#include <algorithm>

#include "topology/torus.h"

namespace trnccl::topology {

std::vector<std::vector<int>> instanceChipRings(const Topology& t, int usedChips) {
  usedChips = std::clamp(usedChips, 1, t.chipsPerInstance);
  if (t.isTorus()) {
    const int rows = t.fabric.rows, cols = t.fabric.cols;
    if (usedChips == t.chipsPerInstance) {
      if (auto two = disjointTorusRings(rows, cols); two) return {(*two)[0], (*two)[1]};
    }
    if (usedChips % cols == 0) {
      if (auto ring = torusRowsRing(usedChips / cols, rows, cols); !ring.empty()) return {ring};
    }
  }
  std::vector<int> order(static_cast<size_t>(usedChips));
  for (int i = 0; i < usedChips; ++i) order[static_cast<size_t>(i)] = i;
  return {order};
}

std::vector<int> rankRing(const Layout& l, const std::vector<int>& chipOrder,
                          bool reverseOddInstances) {
  std::vector<int> ring;
  for (int inst = 0; inst < l.instances; ++inst) {
    std::vector<int> order = chipOrder;
    if (reverseOddInstances && inst % 2 == 1) std::reverse(order.begin(), order.end());
    for (int chip : order) {
      for (int core = 0; core < l.ranksPerChip; ++core) {
        if (int r = l.rankAt(inst, chip, core); r >= 0) ring.push_back(r);
      }
    }
  }
  return ring;
}

std::vector<std::vector<int>> rankRings(const Topology& t, const Layout& l) {
  int firstInstanceRanks = std::min(l.nranks, l.ranksPerInstance);
  int usedChips = (firstInstanceRanks + l.ranksPerChip - 1) / l.ranksPerChip;
  // Reversing every other instance keeps the instance-to-instance step on a Z link only
  // when the Z ring closes back on instance 0 going forward, i.e. an even instance count.
  bool reverse = t.fabric.kind == FabricKind::kTorus3d && t.instances % 2 == 0;
  std::vector<std::vector<int>> rings;
  for (const auto& chips : instanceChipRings(t, usedChips)) {
    rings.push_back(rankRing(l, chips, reverse));
  }
  return rings;
}

bool ringFollowsLinks(const Topology& t, const Layout& l, const std::vector<int>& ring) {
  for (size_t i = 0; i < ring.size(); ++i) {
    auto route = routeBetweenRanks(t, l, ring[i], ring[(i + 1) % ring.size()]);
    if (!route || route->hops > 1) return false;
  }
  return true;
}

}  // namespace trnccl::topology
