// Topology → YAML in the schema parseTopology reads, so load(dump(t)) == t. Derived chips and
// links are not written: they follow from the fabric; only chips with extra links appear.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "topology/loader.h"

namespace trnccl::topology {
namespace {

// fmt's shortest representation reads back to the same double (96 stays "96").
std::string num(double v) { return fmt::format("{}", v); }

void emitBands(YAML::Emitter& out, const char* key, const std::vector<RateBand>& bands) {
  if (bands.empty()) return;
  out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const RateBand& b : bands) {
    out << YAML::BeginMap << YAML::Key << "bytes" << YAML::Value << b.bytes;
    out << YAML::Key << "gbps" << YAML::Value << num(b.gbps) << YAML::EndMap;
  }
  out << YAML::EndSeq;
}

void emitLinkFields(YAML::Emitter& out, const LinkSpec& l) {
  out << YAML::Key << "class" << YAML::Value << std::string(linkClassName(l.cls));
  out << YAML::Key << "bandwidth_gbps" << YAML::Value << num(l.bandwidthGbps);
  out << YAML::Key << "latency_us" << YAML::Value << num(l.latencyUs);
  if (l.inPlaceBytes > 0) out << YAML::Key << "in_place_bytes" << YAML::Value << l.inPlaceBytes;
  emitBands(out, "bands", l.bands);
}

void emitLink(YAML::Emitter& out, const char* key, const LinkSpec& l) {
  out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginMap;
  emitLinkFields(out, l);
  out << YAML::EndMap;
}

void emitFabric(YAML::Emitter& out, const Fabric& f) {
  out << YAML::Key << "fabric" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "kind" << YAML::Value << std::string(fabricKindName(f.kind));
  if (f.kind == FabricKind::kTorus2d || f.kind == FabricKind::kTorus3d) {
    out << YAML::Key << "rows" << YAML::Value << f.rows;
    out << YAML::Key << "cols" << YAML::Value << f.cols;
  }
  if (f.kind != FabricKind::kNone) emitLink(out, "link", f.link);
  if (f.zLink) emitLink(out, "z_link", *f.zLink);
  if (f.crossLink) emitLink(out, "cross_link", *f.crossLink);
  out << YAML::EndMap;
}

void emitChips(YAML::Emitter& out, const std::vector<Chip>& chips) {
  bool any = false;
  for (const Chip& c : chips) any = any || !c.extraLinks.empty();
  if (!any) return;
  out << YAML::Key << "chips" << YAML::Value << YAML::BeginSeq;
  for (const Chip& c : chips) {
    if (c.extraLinks.empty()) continue;
    out << YAML::BeginMap << YAML::Key << "id" << YAML::Value << c.id;
    out << YAML::Key << "links" << YAML::Value << YAML::BeginSeq;
    for (const ExtraLink& x : c.extraLinks) {
      out << YAML::Flow << YAML::BeginMap << YAML::Key << "peer" << YAML::Value << x.peer;
      emitLinkFields(out, x.spec);
      out << YAML::EndMap;
    }
    out << YAML::EndSeq << YAML::EndMap;
  }
  out << YAML::EndSeq;
}

}  // namespace

std::string dumpYaml(const Topology& t) {
  YAML::Emitter out;
  out << YAML::Comment("trnccl topology (schema: docs/TOPOLOGY.md); bandwidths in GB/s");
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << YAML::DoubleQuoted << t.name;
  out << YAML::Key << "description" << YAML::Value << YAML::DoubleQuoted << t.description;
  out << YAML::Key << "instances" << YAML::Value << t.instances;
  out << YAML::Key << "chips_per_instance" << YAML::Value << t.chipsPerInstance;
  out << YAML::Key << "lnc" << YAML::Value << t.lnc;
  out << YAML::Key << "device" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "kind" << YAML::Value << t.device.name;
  out << YAML::Key << "cores_per_chip" << YAML::Value << t.device.coresPerChip;
  out << YAML::Key << "hbm_gib_per_chip" << YAML::Value << num(t.device.hbmGibPerChip);
  out << YAML::Key << "hbm_bandwidth_gbps" << YAML::Value << num(t.device.hbmBandwidthGbps);
  if (t.device.dmaEngineGbps > 0) {
    out << YAML::Key << "dma_engine_gbps" << YAML::Value << num(t.device.dmaEngineGbps);
  }
  if (t.device.messageUs != kMessageUs) {
    out << YAML::Key << "message_us" << YAML::Value << num(t.device.messageUs);
  }
  if (t.device.callUs != 0) {
    out << YAML::Key << "call_us" << YAML::Value << num(t.device.callUs);
  }
  if (t.device.inPlaceFreshUs != 0) {
    out << YAML::Key << "in_place_fresh_us" << YAML::Value << num(t.device.inPlaceFreshUs);
  }
  emitBands(out, "hbm_bands", t.device.hbmBands);
  out << YAML::EndMap;
  emitFabric(out, t.fabric);
  if (t.network) {
    out << YAML::Key << "network" << YAML::Value << YAML::Flow << YAML::BeginMap;
    emitLinkFields(out, t.network->link);
    out << YAML::Key << "nics" << YAML::Value << t.network->nics;
    out << YAML::Key << "nic_of_chip" << YAML::Value << YAML::Flow << t.network->nicOfChip;
    out << YAML::EndMap;
  }
  emitChips(out, t.chips);
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace trnccl::topology
