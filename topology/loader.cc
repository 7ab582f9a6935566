// YAML → Topology. Field checks happen here, where yaml-cpp's marks give each field's line;
// cross-field checks live in finalizeTopology, whose messages start with the field's path,
// which findLine() walks back to a line.
#include "topology/loader.h"

#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <set>
#include <sstream>

#include "common/env.h"
#include "common/log.h"
#include "topology/builtins.h"

namespace trnccl::topology {
namespace {

class Parser {
 public:
  explicit Parser(std::string source) : source_(std::move(source)) {}

  Status error(const YAML::Node& at, const std::string& path, const std::string& what) const {
    return invalidArgument("{}:{}: {}: {}", source_, at.Mark().line + 1, path, what);
  }

  Status onlyKeys(const YAML::Node& map, const std::string& path,
                  std::initializer_list<const char*> keys) const {
    if (!map.IsMap()) return error(map, path, "must be a mapping");
    for (const auto& kv : map) {
      std::string key = kv.first.as<std::string>();
      bool known = false;
      for (const char* k : keys) known = known || key == k;
      if (!known) return error(kv.first, path, fmt::format("unknown field '{}'", key));
    }
    return Status::ok();
  }

  // A number under `key`: > 0 when positive, else >= 0.
  Result<double> number(const YAML::Node& map, const std::string& path, const char* key,
                        bool positive) const {
    YAML::Node n = map[key];
    if (!n) return error(map, path, fmt::format("missing '{}'", key));
    double v = 0;
    if (!n.IsScalar() || !YAML::convert<double>::decode(n, v) || v < 0 || (positive && v == 0)) {
      return error(
          n, path,
          fmt::format("'{}' must be a {} number", key, positive ? "positive" : "non-negative"));
    }
    return v;
  }

  Result<int> integer(const YAML::Node& map, const std::string& path, const char* key, int minimum,
                      std::optional<int> fallback = std::nullopt) const {
    YAML::Node n = map[key];
    if (!n) {
      if (fallback) return *fallback;
      return error(map, path, fmt::format("missing '{}'", key));
    }
    int v = 0;
    if (!n.IsScalar() || !YAML::convert<int>::decode(n, v) || v < minimum) {
      return error(n, path, fmt::format("'{}' must be an integer >= {}", key, minimum));
    }
    return v;
  }

  Result<std::string> text(const YAML::Node& map, const std::string& path, const char* key,
                           std::optional<std::string> fallback = std::nullopt) const {
    YAML::Node n = map[key];
    if (!n) {
      if (fallback) return *fallback;
      return error(map, path, fmt::format("missing '{}'", key));
    }
    if (!n.IsScalar()) return error(n, path, fmt::format("'{}' must be a string", key));
    return n.as<std::string>();
  }

  Result<LinkSpec> linkFields(const YAML::Node& map, const std::string& path) const {
    auto cls = text(map, path, "class");
    if (!cls) return cls.status();
    auto parsed = parseLinkClass(*cls);
    if (!parsed) {
      return error(map["class"], path,
                   fmt::format("'class' must be neuronlink, efa or pcie, not '{}'", *cls));
    }
    auto bw = number(map, path, "bandwidth_gbps", true);
    if (!bw) return bw.status();
    auto lat = number(map, path, "latency_us", false);
    if (!lat) return lat.status();
    return LinkSpec{*parsed, *bw, *lat};
  }

  Result<LinkSpec> link(const YAML::Node& map, const std::string& path) const {
    TRN_TRY(
        onlyKeys(map, path, {"class", "bandwidth_gbps", "latency_us", "in_place_bytes", "bands"}));
    auto spec = linkFields(map, path);
    if (!spec) return spec;
    if (map["in_place_bytes"]) {
      auto inPlace = number(map, path, "in_place_bytes", false);
      if (!inPlace) return inPlace.status();
      spec->inPlaceBytes = static_cast<uint64_t>(*inPlace);
    }
    auto bands = rateBands(map, path, "bands");
    if (!bands) return bands.status();
    spec->bands = std::move(*bands);
    return spec;
  }

  // A list of {bytes, gbps} under `key` (RateBand), bytes strictly ascending; absent: none.
  Result<std::vector<RateBand>> rateBands(const YAML::Node& map, const std::string& path,
                                          const char* key) const {
    std::vector<RateBand> out;
    YAML::Node list = map[key];
    if (!list) return out;
    if (!list.IsSequence()) return error(list, path, fmt::format("'{}' must be a list", key));
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string at = fmt::format("{}.{}[{}]", path, key, i);
      TRN_TRY(onlyKeys(list[i], at, {"bytes", "gbps"}));
      auto bytes = number(list[i], at, "bytes", true);
      if (!bytes) return bytes.status();
      auto gbps = number(list[i], at, "gbps", true);
      if (!gbps) return gbps.status();
      out.push_back({static_cast<uint64_t>(*bytes), *gbps});
      if (out.size() > 1 && out.back().bytes <= out[out.size() - 2].bytes) {
        return error(list[i], at, "'bytes' must grow from band to band");
      }
    }
    return out;
  }

  const std::string& source() const { return source_; }

 private:
  std::string source_;
};

Status parseDevice(const Parser& p, const YAML::Node& root, Topology& t) {
  YAML::Node d = root["device"];
  if (!d) return p.error(root, "device", "missing");
  TRN_TRY(
      p.onlyKeys(d, "device",
                 {"kind", "cores_per_chip", "hbm_gib_per_chip", "hbm_bandwidth_gbps",
                  "dma_engine_gbps", "message_us", "call_us", "in_place_fresh_us", "hbm_bands"}));
  auto kind = p.text(d, "device", "kind");
  auto cores = p.integer(d, "device", "cores_per_chip", 1);
  auto hbm = p.number(d, "device", "hbm_gib_per_chip", true);
  auto hbmBw = p.number(d, "device", "hbm_bandwidth_gbps", true);
  for (const Status& s : {kind.status(), cores.status(), hbm.status(), hbmBw.status()}) TRN_TRY(s);
  t.device = DeviceKind{*kind, *cores, *hbm, *hbmBw};
  if (d["dma_engine_gbps"]) {
    auto dma = p.number(d, "device", "dma_engine_gbps", true);
    if (!dma) return dma.status();
    t.device.dmaEngineGbps = *dma;
  }
  if (d["message_us"]) {  // else the model's kMessageUs (a measured machine gives its own)
    auto messageUs = p.number(d, "device", "message_us", false);
    if (!messageUs) return messageUs.status();
    t.device.messageUs = *messageUs;
  }
  if (d["call_us"]) {  // else 0 (a measured machine gives its own)
    auto callUs = p.number(d, "device", "call_us", false);
    if (!callUs) return callUs.status();
    t.device.callUs = *callUs;
  }
  if (d["in_place_fresh_us"]) {  // else 0 (a measured machine gives its own)
    auto freshUs = p.number(d, "device", "in_place_fresh_us", false);
    if (!freshUs) return freshUs.status();
    t.device.inPlaceFreshUs = *freshUs;
  }
  auto bands = p.rateBands(d, "device", "hbm_bands");
  if (!bands) return bands.status();
  t.device.hbmBands = std::move(*bands);
  return Status::ok();
}

Status parseFabric(const Parser& p, const YAML::Node& root, Topology& t) {
  YAML::Node f = root["fabric"];
  if (!f) return Status::ok();  // kNone
  TRN_TRY(p.onlyKeys(f, "fabric", {"kind", "rows", "cols", "link", "z_link", "cross_link"}));
  auto kindName = p.text(f, "fabric", "kind");
  if (!kindName) return kindName.status();
  auto kind = parseFabricKind(*kindName);
  if (!kind) {
    return p.error(
        f["kind"], "fabric",
        fmt::format("'kind' must be none, torus2d, torus3d or switch, not '{}'", *kindName));
  }
  t.fabric.kind = *kind;
  bool torus = *kind == FabricKind::kTorus2d || *kind == FabricKind::kTorus3d;
  auto rows = p.integer(f, "fabric", "rows", 1, torus ? std::nullopt : std::optional<int>(0));
  auto cols = p.integer(f, "fabric", "cols", 1, torus ? std::nullopt : std::optional<int>(0));
  TRN_TRY(rows.status());
  TRN_TRY(cols.status());
  t.fabric.rows = *rows;
  t.fabric.cols = *cols;
  if (*kind == FabricKind::kNone) return Status::ok();
  if (!f["link"]) return p.error(f, "fabric", "missing 'link'");
  auto link = p.link(f["link"], "fabric.link");
  TRN_TRY(link.status());
  t.fabric.link = *link;
  if (f["z_link"]) {
    auto z = p.link(f["z_link"], "fabric.z_link");
    TRN_TRY(z.status());
    t.fabric.zLink = *z;
  }
  if (f["cross_link"]) {
    auto cross = p.link(f["cross_link"], "fabric.cross_link");
    TRN_TRY(cross.status());
    t.fabric.crossLink = *cross;
  }
  return Status::ok();
}

Status parseNetwork(const Parser& p, const YAML::Node& root, Topology& t) {
  YAML::Node n = root["network"];
  if (!n) return Status::ok();
  TRN_TRY(
      p.onlyKeys(n, "network", {"class", "bandwidth_gbps", "latency_us", "nics", "nic_of_chip"}));
  auto link = p.linkFields(n, "network");
  TRN_TRY(link.status());
  auto nics = p.integer(n, "network", "nics", 1);
  TRN_TRY(nics.status());
  t.network = Network{*link, *nics, {}};
  YAML::Node map = n["nic_of_chip"];
  if (map && !map.IsSequence()) return p.error(map, "network", "'nic_of_chip' must be a list");
  for (size_t c = 0; map && c < map.size(); ++c) {
    int nic = 0;
    if (!map[c].IsScalar() || !YAML::convert<int>::decode(map[c], nic)) {
      return p.error(map[c], "network.nic_of_chip", fmt::format("entry {} must be an integer", c));
    }
    t.network->nicOfChip.push_back(nic);
  }
  return Status::ok();
}

Status parseChips(const Parser& p, const YAML::Node& root, Topology& t) {
  YAML::Node chips = root["chips"];
  if (!chips) return Status::ok();
  if (!chips.IsSequence()) return p.error(chips, "chips", "must be a list");
  for (size_t i = 0; i < chips.size(); ++i) {
    std::string path = fmt::format("chips[{}]", i);
    TRN_TRY(p.onlyKeys(chips[i], path, {"id", "links"}));
    auto id = p.integer(chips[i], path, "id", 0);
    TRN_TRY(id.status());
    Chip chip;
    chip.id = *id;
    YAML::Node links = chips[i]["links"];
    if (links && !links.IsSequence()) return p.error(links, path + ".links", "must be a list");
    for (size_t j = 0; links && j < links.size(); ++j) {
      std::string lpath = fmt::format("{}.links[{}]", path, j);
      TRN_TRY(p.onlyKeys(links[j], lpath, {"peer", "class", "bandwidth_gbps", "latency_us"}));
      auto peer = p.integer(links[j], lpath, "peer", 0);
      TRN_TRY(peer.status());
      auto spec = p.linkFields(links[j], lpath);
      TRN_TRY(spec.status());
      chip.extraLinks.push_back({*peer, *spec});
    }
    t.chips.push_back(std::move(chip));
  }
  return Status::ok();
}

// The line of the deepest field that exists along "a.b[2].c" (the field a finalize error
// names): a key's own line for mappings, so "fabric" points at "fabric:", not its first entry.
int findLine(const YAML::Node& root, const std::string& path) {
  YAML::Node cur = root;
  int line = root.Mark().line;
  std::stringstream parts(path);
  for (std::string part; std::getline(parts, part, '.');) {
    size_t bracket = part.find('[');
    std::string key = part.substr(0, bracket);
    YAML::Node next;
    for (const auto& kv : cur.IsMap() ? cur : YAML::Node()) {
      if (kv.first.as<std::string>() == key) {
        line = kv.first.Mark().line;
        next = kv.second;
      }
    }
    if (!next) break;
    if (bracket != std::string::npos) {
      size_t index = std::stoul(part.substr(bracket + 1));
      if (!next.IsSequence() || index >= next.size()) break;
      next = next[index];
      line = next.Mark().line;
    }
    cur = next;
  }
  return line + 1;
}

Result<Topology> parseRoot(const Parser& p, const YAML::Node& root) {
  if (!root.IsMap()) return p.error(root, "top level", "must be a mapping");
  TRN_TRY(p.onlyKeys(root, "top level",
                     {"name", "description", "instances", "chips_per_instance", "lnc", "device",
                      "fabric", "network", "chips"}));
  Topology t;
  auto name = p.text(root, "top level", "name");
  auto description = p.text(root, "top level", "description", std::string());
  auto instances = p.integer(root, "top level", "instances", 1, 1);
  auto chips = p.integer(root, "top level", "chips_per_instance", 1);
  auto lnc = p.integer(root, "top level", "lnc", 1, 1);
  for (const Status& s :
       {name.status(), description.status(), instances.status(), chips.status(), lnc.status()}) {
    TRN_TRY(s);
  }
  t.name = *name;
  t.description = *description;
  t.instances = *instances;
  t.chipsPerInstance = *chips;
  t.lnc = *lnc;
  TRN_TRY(parseDevice(p, root, t));
  TRN_TRY(parseFabric(p, root, t));
  TRN_TRY(parseNetwork(p, root, t));
  TRN_TRY(parseChips(p, root, t));
  if (Status s = finalizeTopology(t); !s) {
    std::string field = s.message().substr(0, s.message().find(':'));
    return invalidArgument("{}:{}: {}", p.source(), findLine(root, field), s.message());
  }
  return t;
}

bool looksLikePath(const std::string& s) {
  auto endsWith = [&](std::string_view suffix) {
    return s.size() >= suffix.size() &&
           s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return s.find('/') != std::string::npos || endsWith(".yaml") || endsWith(".yml");
}

}  // namespace

Result<Topology> parseTopology(const std::string& text, const std::string& source) {
  Parser parser(source);
  try {
    return parseRoot(parser, YAML::Load(text));
  } catch (const YAML::Exception& e) {
    return invalidArgument("{}:{}:{}: {}", source, e.mark.line + 1, e.mark.column + 1, e.msg);
  }
}

namespace {

Result<Topology> logLoaded(Result<Topology> topo, std::string_view from) {
  if (topo) {
    TRN_INFO(kInit, "topology {} from {}: {} instance(s) x {} chips x {} ranks, fabric {}",
             topo->name, from, topo->instances, topo->chipsPerInstance, topo->ranksPerChip(),
             fabricKindName(topo->fabric.kind));
  }
  return topo;
}

const BuiltinDescription* findBuiltin(std::string_view name) {
  for (const BuiltinDescription& b : builtinDescriptions()) {
    if (b.name == name) return &b;
  }
  return nullptr;
}

}  // namespace

Result<Topology> loadTopologyFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return invalidArgument("cannot read topology file '{}': {}", path, std::strerror(errno));
  std::stringstream buffer;
  buffer << in.rdbuf();
  return logLoaded(parseTopology(buffer.str(), path), path);
}

std::vector<std::string> topologySearchPath() {
  std::vector<std::string> dirs;
  std::stringstream extra(env::getString("TRNCCL_TOPOLOGY_PATH", ""));
  for (std::string dir; std::getline(extra, dir, ':');) {
    if (!dir.empty()) dirs.push_back(dir);
  }
  return dirs;
}

std::vector<std::string> listTopologies() {
  std::set<std::string> names;
  for (const std::string& dir : topologySearchPath()) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      if (entry.path().extension() == ".yaml") names.insert(entry.path().stem().string());
    }
  }
  for (const BuiltinDescription& b : builtinDescriptions()) names.emplace(b.name);
  return {names.begin(), names.end()};
}

Result<Topology> loadTopology(const std::string& nameOrPath) {
  if (looksLikePath(nameOrPath)) return loadTopologyFile(nameOrPath);
  std::vector<std::string> dirs = topologySearchPath();
  for (const std::string& dir : dirs) {
    std::string path = dir + "/" + nameOrPath + ".yaml";
    if (std::filesystem::exists(path)) return loadTopologyFile(path);
  }
  if (const BuiltinDescription* b = findBuiltin(nameOrPath)) {
    std::string source = fmt::format("{}.yaml (built-in)", b->name);
    return logLoaded(parseTopology(std::string(b->yaml), source), source);
  }
  return invalidArgument(
      "topology '{}' is neither a built-in nor in TRNCCL_TOPOLOGY_PATH ('{}'); known: {}",
      nameOrPath, fmt::join(dirs, ":"), fmt::join(listTopologies(), ", "));
}

}  // namespace trnccl::topology
