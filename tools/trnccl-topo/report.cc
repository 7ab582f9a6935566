// Text sections of trnccl-topo: summary, neighbour table, rings and subgroups.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <tuple>

#include "plan/topology_view.h"
#include "sections.h"
#include "topology/rings.h"
#include "topology/subgroups.h"

namespace trnccl::tools {

using namespace topology;

namespace {

std::string linkText(const LinkSpec& l) {
  return fmt::format("{} {} GB/s, {} us", linkClassName(l.cls), l.bandwidthGbps, l.latencyUs);
}

void printGroups(const char* title, const std::vector<Group>& groups) {
  if (groups.empty()) return;
  fmt::print("  {} ({}):\n", title, groups.size());
  for (const Group& g : groups) fmt::print("    [{}]\n", fmt::join(g, " "));
}

}  // namespace

void printSummary(const Topology& t) {
  fmt::print("{}: {}\n", t.name, t.description);
  fmt::print("  instances  {} x {} chips = {} chips\n", t.instances, t.chipsPerInstance,
             t.totalChips());
  fmt::print(
      "  device     {}, {} cores per chip, LNC={} -> {} ranks per chip, {} per instance, "
      "{} in all\n",
      t.device.name, t.device.coresPerChip, t.lnc, t.ranksPerChip(), t.ranksPerInstance(),
      t.totalRanks());
  fmt::print("  HBM        {} GiB per chip ({} GiB per rank), {} GB/s\n", t.device.hbmGibPerChip,
             t.hbmGibPerRank(), t.device.hbmBandwidthGbps);
  fmt::print("  fabric     {}", fabricKindName(t.fabric.kind));
  if (t.isTorus()) fmt::print(" {} x {}", t.fabric.rows, t.fabric.cols);
  if (t.fabric.kind == FabricKind::kTorus3d) fmt::print(" x {} (Z rings)", t.instances);
  if (t.fabric.kind != FabricKind::kNone) fmt::print(", {}", linkText(t.fabric.link));
  if (t.fabric.kind == FabricKind::kSwitch) fmt::print(" per chip, all-to-all");
  fmt::print("\n");
  std::map<std::tuple<bool, int, double, double>, int> kinds;
  for (const Link& l : t.links) {
    ++kinds[{l.zLink, static_cast<int>(l.spec.cls), l.spec.bandwidthGbps, l.spec.latencyUs}];
  }
  for (const auto& [key, count] : kinds) {
    auto [z, cls, bw, lat] = key;
    fmt::print("  links      {} x {}{}\n", count, linkText({static_cast<LinkClass>(cls), bw, lat}),
               z ? " (Z, across instances)" : "");
  }
  if (t.network) {
    const LinkSpec& n = t.network->link;
    fmt::print("  network    {} {} GB/s per instance over {} NICs, {} us\n", linkClassName(n.cls),
               n.bandwidthGbps, t.network->nics, n.latencyUs);
    fmt::print("  rails      NIC of chip 0..{}: {}\n", t.chipsPerInstance - 1,
               fmt::join(t.network->nicOfChip, " "));
  } else {
    fmt::print("  network    none described\n");
  }
}

void printNeighbors(const Topology& t) {
  if (t.fabric.kind == FabricKind::kSwitch) {
    fmt::print("# {}: all {} chips reach each other through the switch\n", t.name, t.totalChips());
  } else if (t.isTorus()) {
    fmt::print("# {}: neighbours up, left, down, right{}\n", t.name,
               t.fabric.kind == FabricKind::kTorus3d ? ", then Z (previous, next instance)" : "");
  }
  for (const Chip& chip : t.chips) {
    std::vector<int> n =
        t.fabric.kind == FabricKind::kSwitch ? std::vector<int>{} : chipNeighbors(t, chip.id);
    fmt::print("device {}: {}\n", chip.id, fmt::join(n, " "));
  }
}

Status printRings(const Topology& t, int nranks) {
  auto made = plan::layoutFromEnv(t, nranks);
  TRN_TRY(made.status());
  const Layout& l = *made;
  fmt::print("{} ranks on {}: {} instance(s), up to {} ranks per instance, {} per chip\n", nranks,
             t.name, l.instances, l.ranksPerInstance, l.ranksPerChip);
  auto rings = rankRings(t, l);
  for (size_t i = 0; i < rings.size(); ++i) {
    fmt::print("  ring {} ({}): {}\n", i,
               ringFollowsLinks(t, l, rings[i]) ? "every step one link" : "some steps multi-hop",
               fmt::join(rings[i], " "));
  }
  printGroups("instances", instanceGroups(l));
  if (l.instances > 1) printGroups("rails (rail 0 = instance leaders)", railGroups(l));
  printGroups("torus rows", torusRowGroups(t, l));
  printGroups("torus columns", torusColumnGroups(t, l));
  printGroups("Z rings", zRingGroups(t, l));
  return Status::ok();
}

}  // namespace trnccl::tools
