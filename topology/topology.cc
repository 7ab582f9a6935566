#include "topology/topology.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <utility>

#include "topology/torus.h"

namespace trnccl::topology {
namespace {

constexpr std::array<std::pair<LinkClass, std::string_view>, 3> kLinkClassNames{
    {{LinkClass::kNeuronLink, "neuronlink"}, {LinkClass::kEfa, "efa"}, {LinkClass::kPcie, "pcie"}}};
constexpr std::array<std::pair<FabricKind, std::string_view>, 4> kFabricKindNames{
    {{FabricKind::kNone, "none"},
     {FabricKind::kTorus2d, "torus2d"},
     {FabricKind::kTorus3d, "torus3d"},
     {FabricKind::kSwitch, "switch"}}};

template <typename Table, typename Key>
std::string_view nameOf(const Table& table, Key key) {
  for (const auto& [k, name] : table) {
    if (k == key) return name;
  }
  return "?";
}

template <typename Key, typename Table>
std::optional<Key> keyOf(const Table& table, std::string_view name) {
  for (const auto& [k, n] : table) {
    if (n == name) return k;
  }
  return std::nullopt;
}

// Every error names the field it concerns first ("fabric.rows: ..."), so the YAML loader can
// point at that field's line.
Status checkScalars(const Topology& t) {
  if (t.instances < 1) return invalidArgument("instances: must be at least 1");
  if (t.chipsPerInstance < 1) return invalidArgument("chips_per_instance: must be at least 1");
  if (t.device.coresPerChip < 1)
    return invalidArgument("device.cores_per_chip: must be at least 1");
  if (t.lnc != 1 && t.lnc != 2) return invalidArgument("lnc: must be 1 or 2, not {}", t.lnc);
  if (t.device.coresPerChip % t.lnc != 0) {
    return invalidArgument("lnc: {} does not divide device.cores_per_chip ({})", t.lnc,
                           t.device.coresPerChip);
  }
  const Fabric& f = t.fabric;
  if (t.isTorus() && f.rows * f.cols != t.chipsPerInstance) {
    return invalidArgument("fabric: rows x cols ({} x {}) must equal chips_per_instance ({})",
                           f.rows, f.cols, t.chipsPerInstance);
  }
  if (!t.isTorus() && (f.rows != 0 || f.cols != 0)) {
    return invalidArgument("fabric.rows: only a torus has rows and cols");
  }
  if (f.kind == FabricKind::kTorus3d && (t.instances < 2 || !f.zLink)) {
    return invalidArgument("fabric: a torus3d needs instances >= 2 and a z_link");
  }
  if (f.kind != FabricKind::kTorus3d && f.zLink) {
    return invalidArgument("fabric.z_link: only a torus3d has a z_link");
  }
  if (f.crossLink && (f.kind != FabricKind::kSwitch || t.instances < 2)) {
    return invalidArgument("fabric.cross_link: only a switch across instances >= 2 has one");
  }
  return Status::ok();
}

// network.nic_of_chip: one NIC per local chip, each NIC serving at least one chip; when left
// out, chip c uses NIC c * nics / chips (consecutive chips share evenly).
Status checkNics(Topology& t) {
  if (!t.network) return Status::ok();
  Network& n = *t.network;
  if (n.nicOfChip.empty()) {
    for (int c = 0; c < t.chipsPerInstance; ++c) {
      n.nicOfChip.push_back(static_cast<int>(int64_t{c} * n.nics / t.chipsPerInstance));
    }
  }
  if (static_cast<int>(n.nicOfChip.size()) != t.chipsPerInstance) {
    return invalidArgument("network.nic_of_chip: {} entries, one per chip ({}) expected",
                           n.nicOfChip.size(), t.chipsPerInstance);
  }
  std::vector<bool> used(static_cast<size_t>(std::max(0, n.nics)), false);
  for (size_t c = 0; c < n.nicOfChip.size(); ++c) {
    const int nic = n.nicOfChip[c];
    if (nic < 0 || nic >= n.nics) {
      return invalidArgument("network.nic_of_chip: chip {} names NIC {}, not one of 0..{}", c, nic,
                             n.nics - 1);
    }
    used[static_cast<size_t>(nic)] = true;
  }
  for (int nic = 0; nic < n.nics; ++nic) {
    if (!used[static_cast<size_t>(nic)]) {
      return invalidArgument("network.nic_of_chip: NIC {} serves no chip", nic);
    }
  }
  return Status::ok();
}

void addTorusLinks(const Topology& t, std::set<std::pair<int, int>>& seen,
                   std::vector<Link>& links) {
  const Fabric& f = t.fabric;
  auto add = [&](int a, int b, const LinkSpec& spec, bool z) {
    if (a == b || !seen.insert({std::min(a, b), std::max(a, b)}).second) return;
    links.push_back({std::min(a, b), std::max(a, b), spec, z});
  };
  for (int inst = 0; inst < t.instances; ++inst) {
    int base = inst * t.chipsPerInstance;
    for (int d = 0; d < t.chipsPerInstance; ++d) {
      auto n = torusNeighbors(d, f.rows, f.cols);
      add(base + d, base + n[kRight], f.link, false);
      add(base + d, base + n[kDown], f.link, false);
    }
  }
  if (f.kind != FabricKind::kTorus3d) return;
  for (int inst = 0; inst < t.instances; ++inst) {
    int next = (inst + 1) % t.instances;
    for (int d = 0; d < t.chipsPerInstance; ++d) {
      add(inst * t.chipsPerInstance + d, next * t.chipsPerInstance + d, *f.zLink, true);
    }
  }
}

}  // namespace

std::string_view linkClassName(LinkClass cls) { return nameOf(kLinkClassNames, cls); }
std::string_view fabricKindName(FabricKind kind) { return nameOf(kFabricKindNames, kind); }
std::optional<LinkClass> parseLinkClass(std::string_view name) {
  return keyOf<LinkClass>(kLinkClassNames, name);
}
std::optional<FabricKind> parseFabricKind(std::string_view name) {
  return keyOf<FabricKind>(kFabricKindNames, name);
}

Status finalizeTopology(Topology& t) {
  TRN_TRY(checkScalars(t));
  TRN_TRY(checkNics(t));
  const int total = t.totalChips();
  // The chips given on input carry only their extra links; keep those, derive the rest.
  std::map<int, std::vector<ExtraLink>> extras;
  for (size_t i = 0; i < t.chips.size(); ++i) {
    const Chip& chip = t.chips[i];
    if (chip.id < 0 || chip.id >= total) {
      return invalidArgument("chips[{}].id: {} is not a chip (0..{})", i, chip.id, total - 1);
    }
    for (size_t j = 0; j < chip.extraLinks.size(); ++j) {
      int peer = chip.extraLinks[j].peer;
      if (peer < 0 || peer >= total || peer == chip.id) {
        return invalidArgument("chips[{}].links[{}].peer: {} is not another chip (0..{})", i, j,
                               peer, total - 1);
      }
    }
    auto& list = extras[chip.id];
    list.insert(list.end(), chip.extraLinks.begin(), chip.extraLinks.end());
  }
  t.chips.clear();
  t.links.clear();
  for (int id = 0; id < total; ++id) {
    Chip chip{id, id / t.chipsPerInstance, id % t.chipsPerInstance, std::nullopt, {}};
    if (t.isTorus()) {
      int z = t.fabric.kind == FabricKind::kTorus3d ? chip.instance : 0;
      chip.coord = Coord{chip.local / t.fabric.cols, chip.local % t.fabric.cols, z};
    }
    if (auto it = extras.find(id); it != extras.end()) chip.extraLinks = it->second;
    t.chips.push_back(std::move(chip));
  }
  std::set<std::pair<int, int>> seen;
  if (t.isTorus()) addTorusLinks(t, seen, t.links);
  for (const Chip& chip : t.chips) {
    for (const ExtraLink& x : chip.extraLinks) {
      t.links.push_back({std::min(chip.id, x.peer), std::max(chip.id, x.peer), x.spec, false});
    }
  }
  return Status::ok();
}

std::vector<int> chipNeighbors(const Topology& t, int chip) {
  std::vector<int> out;
  auto push = [&](int peer) {
    if (peer != chip && std::find(out.begin(), out.end(), peer) == out.end()) out.push_back(peer);
  };
  if (t.isTorus()) {
    int inst = chip / t.chipsPerInstance;
    int base = inst * t.chipsPerInstance;
    for (int n : torusNeighbors(chip - base, t.fabric.rows, t.fabric.cols)) push(base + n);
    if (t.fabric.kind == FabricKind::kTorus3d) {
      push(wrap(inst - 1, t.instances) * t.chipsPerInstance + (chip - base));
      push(wrap(inst + 1, t.instances) * t.chipsPerInstance + (chip - base));
    }
  }
  for (const Link& l : t.links) {
    if (l.zLink) continue;
    if (l.a == chip) push(l.b);
    if (l.b == chip) push(l.a);
  }
  return out;
}

LinkSpec onChipLink(const Topology& t) {
  const double perRank = t.device.dmaEngineGbps > 0
                             ? t.device.dmaEngineGbps
                             : t.device.hbmBandwidthGbps / std::max(1, t.ranksPerChip());
  return {LinkClass::kNeuronLink, perRank, kOnChipLatencyUs};
}

std::optional<Route> routeBetween(const Topology& t, int a, int b) {
  if (a == b) {
    return Route{onChipLink(t), 0};
  }
  for (const Link& l : t.links) {
    if ((l.a == a && l.b == b) || (l.a == b && l.b == a)) return Route{l.spec, 1};
  }
  int ia = a / t.chipsPerInstance, ib = b / t.chipsPerInstance;
  if (t.fabric.kind == FabricKind::kSwitch) {
    return Route{ia != ib && t.fabric.crossLink ? *t.fabric.crossLink : t.fabric.link, 1};
  }
  if (t.isTorus() && (ia == ib || t.fabric.kind == FabricKind::kTorus3d)) {
    int la = a % t.chipsPerInstance, lb = b % t.chipsPerInstance;
    int planar = torusDistance(la, lb, t.fabric.rows, t.fabric.cols);
    int z = ringDistance(ia, ib, t.instances);
    LinkSpec spec = t.fabric.link;
    if (z > 0 && t.fabric.zLink->bandwidthGbps < spec.bandwidthGbps) {
      spec.bandwidthGbps = t.fabric.zLink->bandwidthGbps;
    }
    spec.latencyUs = planar * t.fabric.link.latencyUs + (z > 0 ? z * t.fabric.zLink->latencyUs : 0);
    return Route{spec, planar + z};
  }
  if (ia != ib && t.network) return Route{t.network->link, 1};
  return std::nullopt;
}

}  // namespace trnccl::topology
