#include "topology/rank_box.h"

#include <algorithm>

namespace trnccl::topology {

std::optional<RankBox> rankBox(const Topology& t, const Layout& l) {
  const bool torus = t.fabric.kind == FabricKind::kTorus3d;
  if ((!torus && t.fabric.kind != FabricKind::kSwitch) || l.instances > l.descInstances) {
    return std::nullopt;
  }
  const int perInstance = std::min(l.ranksPerInstance, l.nranks);  // one instance: its ranks
  if (l.nranks % perInstance != 0) return std::nullopt;  // the last instance partly filled
  const int cores = std::min(perInstance, l.ranksPerChip);
  if (perInstance % cores != 0) return std::nullopt;  // the last chip partly filled
  const int chips = perInstance / cores;
  RankBox box;
  if (torus) {
    const int cols = t.fabric.cols;
    if (chips > cols && chips % cols != 0) return std::nullopt;  // not whole rows
    box.sizes = {cores, std::min(chips, cols), chips > cols ? chips / cols : 1, l.instances};
  } else {
    box.sizes = {cores, chips, l.instances};
  }
  // Ranks fill a chip's cores, then the chips of an instance in neuron-ls (row-major) order,
  // then the next instance: the box's order is rank order.
  for (int inst = 0; inst < l.instances; ++inst) {
    for (int chip = 0; chip < chips; ++chip) {
      for (int core = 0; core < cores; ++core) box.ranks.push_back(l.rankAt(inst, chip, core));
    }
  }
  return box;
}

}  // namespace trnccl::topology
