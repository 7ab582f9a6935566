#include "topology/fabric_model.h"

#include <fmt/format.h>

#include <algorithm>

#include "topology/torus.h"

namespace trnccl::topology {
namespace {

constexpr double kBytesPerUsPerGbps = 1e3;  // 1 GB/s = 1e9 B/s = 1e3 B/µs

// The signed number of steps from a to b around a ring of n, the short way (ties go forward).
int ringSteps(int a, int b, int n) {
  int fwd = wrap(b - a, n);
  return fwd <= n - fwd ? fwd : fwd - n;
}

}  // namespace

int FabricModel::add(ResourceKind kind, int a, int b, double gbps, double latencyUs) {
  // An EFA NIC takes each message through its send queue, shared by the ranks of its rail.
  const double messageUs = kind == ResourceKind::kNicOut ? topo_.device.messageUs : 0;
  resources_.push_back(Resource{kind, a, b, gbps * kBytesPerUsPerGbps, latencyUs, messageUs});
  return static_cast<int>(resources_.size()) - 1;
}

int FabricModel::add(ResourceKind kind, int a, int b, const LinkSpec& spec, double latencyUs) {
  const int id = add(kind, a, b, spec.bandwidthGbps, latencyUs);
  if (spec.bands.empty()) return id;
  auto it = std::find(bands_.begin(), bands_.end(), spec.bands);
  if (it == bands_.end()) it = bands_.insert(bands_.end(), spec.bands);
  resources_[static_cast<size_t>(id)].bands = static_cast<int32_t>(it - bands_.begin());
  return id;
}

bool FabricModel::hasBands() const { return !bands_.empty() || !topo_.device.hbmBands.empty(); }

double FabricModel::bytesPerUs(int resource, uint64_t workingSet) const {
  const Resource& r = resources_.at(static_cast<size_t>(resource));
  if (r.bands < 0) return r.bytesPerUs;
  for (const RateBand& b : bands_[static_cast<size_t>(r.bands)]) {
    if (workingSet <= b.bytes) return b.gbps * kBytesPerUsPerGbps;
  }
  return r.bytesPerUs;
}

double FabricModel::hbmBytesPerUs(uint64_t workingSet) const {
  if (topo_.device.hbmBands.empty()) return hbmBytesPerUs_;
  return hbmGbps(topo_.device, workingSet) / topo_.ranksPerChip() * kBytesPerUsPerGbps;
}

Result<FabricModel> FabricModel::build(const Topology& topo, const Layout& layout) {
  FabricModel f;
  f.topo_ = topo;  // first: add() reads the device's message cost
  f.layout_ = layout;
  const int cpi = topo.chipsPerInstance;
  const int chips = layout.instances * cpi;
  const int perCopy = topo.instances * cpi;  // job chips of one copy of the description
  f.links_.resize(chips);
  f.ranksPerChip_ = std::max(1, layout.ranksPerChip);
  const LinkSpec chip = onChipLink(topo);
  for (int jc = 0; jc < chips; ++jc) {
    for (int core = 0; core < f.ranksPerChip_; ++core) {
      f.dma_.push_back(f.add(ResourceKind::kChipDma, jc, core, chip.bandwidthGbps, chip.latencyUs));
    }
  }
  if (topo.fabric.kind == FabricKind::kSwitch) {
    const LinkSpec& port = topo.fabric.link;
    for (int jc = 0; jc < chips; ++jc) {
      f.portUp_.push_back(f.add(ResourceKind::kPortUp, jc, jc, port, port.latencyUs));
      f.portDown_.push_back(f.add(ResourceKind::kPortDown, jc, jc, port, 0));
      for (int id : {f.portUp_.back(), f.portDown_.back()}) {
        f.resources_[static_cast<size_t>(id)].inPlaceBytes = port.inPlaceBytes;
      }
      if (const auto& cross = topo.fabric.crossLink) {
        f.crossUp_.push_back(f.add(ResourceKind::kCrossUp, jc, jc, *cross, cross->latencyUs));
        f.crossDown_.push_back(f.add(ResourceKind::kCrossDown, jc, jc, *cross, 0));
      }
    }
  }
  for (int base = 0; base < chips; base += perCopy) {
    for (const Link& l : topo.links) {
      const int a = base + l.a, b = base + l.b;
      if (a >= chips || b >= chips) continue;  // a partly used last copy
      const double lat = l.spec.latencyUs;
      f.links_[a].push_back({b, f.add(ResourceKind::kLink, a, b, l.spec, lat)});
      f.links_[b].push_back({a, f.add(ResourceKind::kLink, b, a, l.spec, lat)});
    }
  }
  if (topo.network) {
    f.nics_ = std::max(1, topo.network->nics);
    const double gbps = topo.network->link.bandwidthGbps / f.nics_;
    for (int inst = 0; inst < layout.instances; ++inst) {
      for (int nic = 0; nic < f.nics_; ++nic) {
        f.nicOut_.push_back(
            f.add(ResourceKind::kNicOut, inst, nic, gbps, topo.network->link.latencyUs));
        f.nicIn_.push_back(f.add(ResourceKind::kNicIn, inst, nic, gbps, 0));
      }
    }
  }
  f.hbmBytesPerUs_ = topo.device.hbmBandwidthGbps / topo.ranksPerChip() * kBytesPerUsPerGbps;
  return f;
}

std::string FabricModel::resourceName(int id) const {
  const Resource& r = resources_.at(static_cast<size_t>(id));
  switch (r.kind) {
    case ResourceKind::kLink:
      return fmt::format("link {}->{}", r.a, r.b);
    case ResourceKind::kPortUp:
      return fmt::format("switch port {} up", r.a);
    case ResourceKind::kPortDown:
      return fmt::format("switch port {} down", r.a);
    case ResourceKind::kCrossUp:
      return fmt::format("switch tier {} up", r.a);
    case ResourceKind::kCrossDown:
      return fmt::format("switch tier {} down", r.a);
    case ResourceKind::kNicOut:
      return fmt::format("nic {}.{} out", r.a, r.b);
    case ResourceKind::kNicIn:
      return fmt::format("nic {}.{} in", r.a, r.b);
    case ResourceKind::kChipDma:
      return fmt::format("chip {} core {} dma", r.a, r.b);
  }
  return "?";
}

int FabricModel::jobChip(int rank) const {
  const RankPlace& p = layout_.place(rank);
  return p.instance * topo_.chipsPerInstance + p.chip;
}

int FabricModel::linkBetween(int fromChip, int toChip) const {
  for (const auto& [peer, res] : links_[fromChip]) {
    if (peer == toChip) return res;
  }
  return -1;
}

Status FabricModel::push(int resource, Path& r) const {
  if (r.count == Path::kMaxHops) {
    return invalidArgument("{}: a route of more than {} hops is not modelled", topo_.name,
                           Path::kMaxHops);
  }
  const Resource& res = resources_[static_cast<size_t>(resource)];
  r.hops[static_cast<size_t>(r.count++)] = resource;
  r.latencyUs += res.latencyUs;
  r.bytesPerUs = r.count == 1 ? res.bytesPerUs : std::min(r.bytesPerUs, res.bytesPerUs);
  const bool inPlace = res.inPlaceBytes > 0 && (r.count == 1 || r.inPlaceBytes > 0);
  r.inPlaceBytes = inPlace ? std::max(r.inPlaceBytes, res.inPlaceBytes) : 0;
  return Status::ok();
}

// Dimension order on the torus of one copy of the description: Z, then the row, then the column.
Status FabricModel::torusRoute(int fromChip, int toChip, Path& r) const {
  const int cpi = topo_.chipsPerInstance, rows = topo_.fabric.rows, cols = topo_.fabric.cols;
  const int perCopy = topo_.instances * cpi;
  const int base = fromChip / perCopy * perCopy;
  int z = (fromChip - base) / cpi, row = (fromChip % cpi) / cols, col = fromChip % cols;
  const int z2 = (toChip - base) / cpi, row2 = (toChip % cpi) / cols, col2 = toChip % cols;
  auto at = [&] { return base + z * cpi + row * cols + col; };
  auto walk = [&](int& coord, int steps, int n) -> Status {
    for (int dir = steps > 0 ? 1 : -1; steps != 0; steps -= dir) {
      const int from = at();
      coord = wrap(coord + dir, n);
      const int link = linkBetween(from, at());
      if (link < 0) return internalError("no torus link from chip {} to chip {}", from, at());
      TRN_TRY(push(link, r));
    }
    return Status::ok();
  };
  if (topo_.fabric.kind == FabricKind::kTorus3d) {
    TRN_TRY(walk(z, ringSteps(z, z2, topo_.instances), topo_.instances));
  }
  TRN_TRY(walk(col, ringSteps(col, col2, cols), cols));
  return walk(row, ringSteps(row, row2, rows), rows);
}

Result<Path> FabricModel::route(int from, int to) const {
  Path r;
  const int a = jobChip(from), b = jobChip(to);
  if (a == b) {
    TRN_TRY(push(dma_[a * ranksPerChip_ + layout_.place(from).core % ranksPerChip_], r));
    return r;
  }
  if (int link = linkBetween(a, b); link >= 0) {
    TRN_TRY(push(link, r));
    return r;
  }
  const int cpi = topo_.chipsPerInstance, perCopy = topo_.instances * cpi;
  const bool sameCopy = a / perCopy == b / perCopy, sameInstance = a / cpi == b / cpi;
  const FabricKind kind = topo_.fabric.kind;
  // Servers of one switch description: through the switch's narrower higher tier when the
  // description has one (its latency, as topology::routeBetween counts it), else the ports.
  if (sameCopy && kind == FabricKind::kSwitch && !sameInstance && !crossUp_.empty()) {
    TRN_TRY(push(crossUp_[a], r));
    TRN_TRY(push(crossDown_[b], r));
    return r;
  }
  if (sameCopy && kind == FabricKind::kSwitch) {
    TRN_TRY(push(portUp_[a], r));
    TRN_TRY(push(portDown_[b], r));
    return r;
  }
  if (sameCopy &&
      (kind == FabricKind::kTorus3d || (kind == FabricKind::kTorus2d && sameInstance))) {
    TRN_TRY(torusRoute(a, b, r));
    return r;
  }
  if (!sameInstance && topo_.network) {
    const int ia = layout_.place(from).instance, ib = layout_.place(to).instance;
    // Each chip sends through its NIC (rail), network.nic_of_chip.
    const std::vector<int>& nicOf = topo_.network->nicOfChip;
    const int na = nicOf[static_cast<size_t>(layout_.place(from).chip)];
    const int nb = nicOf[static_cast<size_t>(layout_.place(to).chip)];
    TRN_TRY(push(nicOut_[ia * nics_ + na], r));
    TRN_TRY(push(nicIn_[ib * nics_ + nb], r));
    return r;
  }
  return invalidArgument(
      "{}: no path from rank {} (chip {}) to rank {} (chip {}) in the description", topo_.name,
      from, a, to, b);
}

}  // namespace trnccl::topology
