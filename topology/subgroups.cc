#include "topology/subgroups.h"

#include <algorithm>

namespace trnccl::topology {
namespace {

// Ranks of one instance on the given chips, chip by chip, cores consecutive.
Group ranksOnChips(const Layout& l, int instance, const std::vector<int>& chips) {
  Group g;
  for (int chip : chips) {
    for (int core = 0; core < l.ranksPerChip; ++core) {
      if (int r = l.rankAt(instance, chip, core); r >= 0) g.push_back(r);
    }
  }
  return g;
}

std::vector<Group> perInstance(const Layout& l, const std::vector<std::vector<int>>& chipSets) {
  std::vector<Group> out;
  for (int inst = 0; inst < l.instances; ++inst) {
    for (const auto& chips : chipSets) {
      Group g = ranksOnChips(l, inst, chips);
      if (!g.empty()) out.push_back(std::move(g));
    }
  }
  return out;
}

}  // namespace

std::vector<Group> instanceGroups(const Layout& l) {
  std::vector<Group> out(static_cast<size_t>(l.instances));
  for (int r = 0; r < l.nranks; ++r) out[static_cast<size_t>(l.place(r).instance)].push_back(r);
  return out;
}

std::vector<Group> chipGroups(const Layout& l) {
  std::vector<std::vector<int>> single;
  for (int chip = 0; chip < l.chipsPerInstance; ++chip) single.push_back({chip});
  return perInstance(l, single);
}

Group railGroup(const Layout& l, int localRank) {
  Group g;
  if (localRank < 0 || localRank >= l.ranksPerInstance) return g;
  for (int inst = 0; inst < l.instances; ++inst) {
    int r = inst * l.ranksPerInstance + localRank;
    if (r < l.nranks) g.push_back(r);
  }
  return g;
}

std::vector<int> rankNics(const Topology& topo, const Layout& l) {
  std::vector<int> nics;
  if (!topo.network) return nics;
  for (int r = 0; r < l.nranks; ++r) {
    nics.push_back(topo.network->nicOfChip.at(static_cast<size_t>(l.place(r).chip)));
  }
  return nics;
}

std::vector<Group> railGroups(const Layout& l) {
  std::vector<Group> out;
  int rails = std::min(l.ranksPerInstance, l.nranks);  // a lone partial instance has fewer
  for (int i = 0; i < rails; ++i) out.push_back(railGroup(l, i));
  return out;
}

std::vector<std::vector<int>> torusRowChips(const Topology& t) {
  std::vector<std::vector<int>> rows;
  if (!t.isTorus()) return rows;
  for (int r = 0; r < t.fabric.rows; ++r) {
    rows.emplace_back();
    for (int c = 0; c < t.fabric.cols; ++c) rows.back().push_back(r * t.fabric.cols + c);
  }
  return rows;
}

std::vector<std::vector<int>> torusColumnChips(const Topology& t) {
  std::vector<std::vector<int>> cols;
  if (!t.isTorus()) return cols;
  for (int c = 0; c < t.fabric.cols; ++c) {
    cols.emplace_back();
    for (int r = 0; r < t.fabric.rows; ++r) cols.back().push_back(r * t.fabric.cols + c);
  }
  return cols;
}

std::vector<Group> torusRowGroups(const Topology& t, const Layout& l) {
  return perInstance(l, torusRowChips(t));
}

std::vector<Group> torusColumnGroups(const Topology& t, const Layout& l) {
  return perInstance(l, torusColumnChips(t));
}

std::vector<std::vector<int>> zRingChips(const Topology& t) {
  std::vector<std::vector<int>> rings;
  if (t.fabric.kind != FabricKind::kTorus3d) return rings;
  for (int local = 0; local < t.chipsPerInstance; ++local) {
    rings.emplace_back();
    for (int z = 0; z < t.instances; ++z) rings.back().push_back(z * t.chipsPerInstance + local);
  }
  return rings;
}

std::vector<Group> zRingGroups(const Topology& t, const Layout& l) {
  std::vector<Group> out;
  if (t.fabric.kind != FabricKind::kTorus3d) return out;
  int copies = (l.instances + t.instances - 1) / t.instances;
  for (int copy = 0; copy < copies; ++copy) {
    for (int chip = 0; chip < l.chipsPerInstance; ++chip) {
      for (int core = 0; core < l.ranksPerChip; ++core) {
        Group g;
        for (int z = 0; z < t.instances; ++z) {
          if (int r = l.rankAt(copy * t.instances + z, chip, core); r >= 0) g.push_back(r);
        }
        if (!g.empty()) out.push_back(std::move(g));
      }
    }
  }
  return out;
}

}  // namespace trnccl::topology
