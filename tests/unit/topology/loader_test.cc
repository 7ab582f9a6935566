// Built-in descriptions carry DESIGN.md's facts; dump/load round-trips; bad files are reported
// with file, line and field; names resolve through TRNCCL_TOPOLOGY_PATH before the built-ins.
#include "topology/loader.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "topo_test_util.h"

namespace trnccl::topology {
namespace {

using testing::builtin;
using testing::ScopedEnv;
using testing::TempFile;

const char* const kBuiltins[] = {
    "trn1.2xlarge",       "trn1.32xlarge",    "trn1n.32xlarge",        "trn2.48xlarge",
    "trn2.48xlarge-lnc2", "trn2-ultraserver", "trn3-ultraserver-gen1", "trn3-ultraserver-gen2"};

TEST(Builtins, AllLoadUnderTheirOwnName) {
  for (const char* name : kBuiltins) {
    auto topo = loadTopology(name);
    ASSERT_TRUE(topo) << name << ": " << topo.status().message();
    EXPECT_EQ(topo->name, name);
  }
  auto names = listTopologies();
  for (const char* name : kBuiltins) {
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  }
}

TEST(Builtins, Trn1) {
  Topology small = builtin("trn1.2xlarge");
  EXPECT_EQ(small.totalChips(), 1);
  EXPECT_EQ(small.device.coresPerChip, 2);
  EXPECT_EQ(small.device.hbmGibPerChip, 32);
  EXPECT_EQ(small.device.hbmBandwidthGbps, 820);
  EXPECT_EQ(small.fabric.kind, FabricKind::kNone);
  EXPECT_FALSE(small.network);

  Topology t = builtin("trn1.32xlarge");
  EXPECT_EQ(t.totalChips(), 16);
  EXPECT_EQ(t.device.name, "NeuronCore-v2");
  EXPECT_EQ(t.ranksPerInstance(), 32);
  EXPECT_EQ(t.hbmGibPerRank(), 16);
  EXPECT_EQ(t.fabric.kind, FabricKind::kTorus2d);
  EXPECT_EQ(t.fabric.rows * t.fabric.cols, 16);
  EXPECT_EQ(t.fabric.link.bandwidthGbps * 4, 384);  // 384 GB/s per chip over 4 neighbours
  EXPECT_EQ(t.links.size(), 32u);                   // 16 chips x 4 links / 2 ends
  ASSERT_TRUE(t.network);
  EXPECT_EQ(t.network->link.cls, LinkClass::kEfa);
  EXPECT_EQ(t.network->link.bandwidthGbps * 8, 800);  // 800 Gb/s
  EXPECT_EQ(t.network->nics, 8);
  EXPECT_EQ(t.chips[5].coord, (Coord{1, 1, 0}));

  Topology n = builtin("trn1n.32xlarge");
  EXPECT_EQ(n.network->link.bandwidthGbps * 8, 1600);
}

TEST(Builtins, Trn2AndLnc) {
  Topology t = builtin("trn2.48xlarge");
  EXPECT_EQ(t.totalChips(), 16);
  EXPECT_EQ(t.device.coresPerChip, 8);
  EXPECT_EQ(t.device.hbmGibPerChip, 96);
  EXPECT_EQ(t.device.hbmBandwidthGbps, 2900);
  EXPECT_EQ(t.fabric.link.bandwidthGbps * 4, 1024);
  EXPECT_EQ(t.network->link.bandwidthGbps * 8, 3200);
  EXPECT_EQ(t.network->nics, 16);
  EXPECT_EQ(t.ranksPerInstance(), 128);

  Topology lnc2 = builtin("trn2.48xlarge-lnc2");
  EXPECT_EQ(lnc2.lnc, 2);
  EXPECT_EQ(lnc2.ranksPerChip(), 4);
  EXPECT_EQ(lnc2.ranksPerInstance(), 64);
  EXPECT_EQ(lnc2.hbmGibPerRank(), 24);
}

TEST(Builtins, Trn2UltraServer) {
  Topology t = builtin("trn2-ultraserver");
  EXPECT_EQ(t.instances, 4);
  EXPECT_EQ(t.totalChips(), 64);
  EXPECT_EQ(t.fabric.kind, FabricKind::kTorus3d);
  ASSERT_TRUE(t.fabric.zLink);
  EXPECT_EQ(t.fabric.zLink->bandwidthGbps * 2, 256);  // +256 GB/s per chip over 2 Z links
  int zLinks = 0;
  for (const Link& l : t.links) zLinks += l.zLink ? 1 : 0;
  EXPECT_EQ(zLinks, 64);  // a 4-ring per coordinate, 16 coordinates
  EXPECT_EQ(t.links.size(), 4u * 32 + 64);
  EXPECT_EQ(t.chips[16 * 2 + 5].coord, (Coord{1, 1, 2}));
  // Chip 0's neighbours: the in-instance torus, then the Z neighbours (instances 3 and 1).
  EXPECT_EQ(chipNeighbors(t, 0), (std::vector<int>{12, 3, 4, 1, 48, 16}));
}

TEST(Builtins, Trn3UltraServers) {
  Topology g1 = builtin("trn3-ultraserver-gen1");
  EXPECT_EQ(g1.totalChips(), 64);
  Topology g2 = builtin("trn3-ultraserver-gen2");
  EXPECT_EQ(g2.totalChips(), 144);
  for (const Topology* t : {&g1, &g2}) {
    EXPECT_EQ(t->device.name, "NeuronCore-v4");
    EXPECT_EQ(t->device.coresPerChip, 8);
    EXPECT_EQ(t->device.hbmGibPerChip, 144);
    EXPECT_EQ(t->device.hbmBandwidthGbps, 4900);
    EXPECT_EQ(t->fabric.kind, FabricKind::kSwitch);
    EXPECT_EQ(t->fabric.link.bandwidthGbps, 2560);
    // All-to-all: any two chips are one switch hop apart.
    auto route = routeBetween(*t, 0, t->totalChips() - 1);
    ASSERT_TRUE(route);
    EXPECT_EQ(route->hops, 1);
  }
  // Gen2's servers of 4 chips: inside a server the port, across servers the narrower tier.
  EXPECT_FALSE(g1.fabric.crossLink);
  ASSERT_TRUE(g2.fabric.crossLink);
  EXPECT_EQ(routeBetween(g2, 0, 3)->link.bandwidthGbps, 2560);
  EXPECT_EQ(routeBetween(g2, 3, 4)->link.bandwidthGbps, g2.fabric.crossLink->bandwidthGbps);
  EXPECT_LT(g2.fabric.crossLink->bandwidthGbps, 2560);
}

TEST(RoundTrip, EveryBuiltinDumpsAndLoadsEqual) {
  for (const char* name : kBuiltins) {
    Topology t = builtin(name);
    std::string yaml = dumpYaml(t);
    auto back = parseTopology(yaml, "<dump>");
    ASSERT_TRUE(back) << name << ": " << back.status().message() << "\n" << yaml;
    EXPECT_EQ(*back, t) << name << "\n" << yaml;
    EXPECT_EQ(dumpYaml(*back), yaml);
  }
}

const char* const kCustom = R"(name: custom
description: "two chips over PCIe: \"quoted\""
chips_per_instance: 2
device: {kind: NeuronCore-v2, cores_per_chip: 2, hbm_gib_per_chip: 32, hbm_bandwidth_gbps: 820.5}
chips:
  - id: 0
    links:
      - {peer: 1, class: pcie, bandwidth_gbps: 31.5, latency_us: 0.1}
)";

TEST(RoundTrip, ExtraLinksAndOddNumbers) {
  auto t = parseTopology(kCustom, "custom.yaml");
  ASSERT_TRUE(t) << t.status().message();
  ASSERT_EQ(t->links.size(), 1u);
  EXPECT_EQ(t->links[0].spec.cls, LinkClass::kPcie);
  EXPECT_EQ(t->links[0].spec.latencyUs, 0.1);
  auto back = parseTopology(dumpYaml(*t), "<dump>");
  ASSERT_TRUE(back) << back.status().message();
  EXPECT_EQ(*back, *t);
  EXPECT_EQ(back->description, "two chips over PCIe: \"quoted\"");
}

// device.dma_engine_gbps (optional) is the rate of a rank's transfers to the other cores of its
// chip (onChipLink), and it survives a dump; without it a rank has its share of HBM bandwidth.
TEST(RoundTrip, DmaEngineRateIsTheOnChipLink) {
  std::string text = kCustom;
  const std::string hbm = "hbm_bandwidth_gbps: 820.5";
  auto plain = parseTopology(text, "custom.yaml");
  ASSERT_TRUE(plain) << plain.status().message();
  EXPECT_EQ(onChipLink(*plain).bandwidthGbps, 820.5 / 2);
  text.replace(text.find(hbm), hbm.size(), hbm + ", dma_engine_gbps: 27.2");
  auto t = parseTopology(text, "custom.yaml");
  ASSERT_TRUE(t) << t.status().message();
  EXPECT_EQ(onChipLink(*t).bandwidthGbps, 27.2);
  auto back = parseTopology(dumpYaml(*t), "<dump>");
  ASSERT_TRUE(back) << back.status().message();
  EXPECT_EQ(*back, *t);
}

// fabric.link's in_place_bytes (the `host` description of the shm transport: messages from that
// size are read in place, one copy instead of two) loads and survives a dump; absent, it is 0.
TEST(RoundTrip, InPlaceBytesOfASwitchLink) {
  const std::string text = R"(name: host
chips_per_instance: 2
device: {kind: host, cores_per_chip: 1, hbm_gib_per_chip: 1, hbm_bandwidth_gbps: 6}
fabric:
  kind: switch
  link: {class: pcie, bandwidth_gbps: 2.5, latency_us: 0.4, in_place_bytes: 65536}
)";
  auto t = parseTopology(text, "host.yaml");
  ASSERT_TRUE(t) << t.status().message();
  EXPECT_EQ(t->fabric.link.inPlaceBytes, 65536u);
  auto back = parseTopology(dumpYaml(*t), "<dump>");
  ASSERT_TRUE(back) << back.status().message();
  EXPECT_EQ(*back, *t);
  auto plain = parseTopology(kCustom, "custom.yaml");
  ASSERT_TRUE(plain) << plain.status().message();
  EXPECT_EQ(plain->fabric.link.inPlaceBytes, 0u);
}

// device.message_us, call_us and in_place_fresh_us (the `host` description's per-message,
// per-call and fresh in-place costs, measured by trnccl-sim-calibrate from the library's own ring
// steps) load and survive a dump; absent, a message costs the model's kMessageUs, a call nothing
// and a fresh in-place read nothing more (every built-in), and a negative cost is an error.
TEST(RoundTrip, MessageAndCallCostOfTheDevice) {
  const std::string text = R"(name: host
chips_per_instance: 2
device: {kind: host, cores_per_chip: 1, hbm_gib_per_chip: 1, hbm_bandwidth_gbps: 6,
         message_us: 2.25, call_us: 1.5, in_place_fresh_us: 4.75}
fabric:
  kind: switch
  link: {class: pcie, bandwidth_gbps: 2.5, latency_us: 0.4}
)";
  auto t = parseTopology(text, "host.yaml");
  ASSERT_TRUE(t) << t.status().message();
  EXPECT_EQ(t->device.messageUs, 2.25);
  EXPECT_EQ(t->device.callUs, 1.5);
  EXPECT_EQ(t->device.inPlaceFreshUs, 4.75);
  auto back = parseTopology(dumpYaml(*t), "<dump>");
  ASSERT_TRUE(back) << back.status().message();
  EXPECT_EQ(*back, *t);
  auto plain = parseTopology(kCustom, "custom.yaml");
  ASSERT_TRUE(plain) << plain.status().message();
  EXPECT_EQ(plain->device.messageUs, kMessageUs);
  EXPECT_EQ(plain->device.callUs, 0);
  EXPECT_EQ(plain->device.inPlaceFreshUs, 0);
  // Each cost made negative in turn (the value as written, its field).
  for (const auto& [value, field] : {std::pair{"2.25", "message_us"}, std::pair{"1.5", "call_us"},
                                     std::pair{"4.75", "in_place_fresh_us"}}) {
    std::string negative = text;
    negative.replace(negative.find(value), std::string(value).size(), "-2");
    auto bad = parseTopology(negative, "host.yaml");
    ASSERT_FALSE(bad) << field;
    EXPECT_NE(bad.status().message().find(fmt::format("'{}' must be a non-negative number", field)),
              std::string::npos)
        << bad.status().message();
  }
}

// Working-set bands (fabric.link's `bands`, device's `hbm_bands`: trnccl-sim-calibrate's rates
// per working set) load, pick the first band at least as large as the working set, and survive a
// dump; absent, the rate is the plain field's at every working set.
TEST(RoundTrip, WorkingSetBands) {
  const std::string text = R"(name: host
chips_per_instance: 2
device:
  {kind: host, cores_per_chip: 1, hbm_gib_per_chip: 1, hbm_bandwidth_gbps: 6,
   hbm_bands: [{bytes: 65536, gbps: 30}, {bytes: 1048576, gbps: 12}]}
fabric:
  kind: switch
  link: {class: pcie, bandwidth_gbps: 2.5, latency_us: 0.4, bands: [{bytes: 131072, gbps: 9}]}
)";
  auto t = parseTopology(text, "host.yaml");
  ASSERT_TRUE(t) << t.status().message();
  EXPECT_EQ(t->device.hbmBands, (std::vector<RateBand>{{65536, 30}, {1048576, 12}}));
  EXPECT_EQ(t->fabric.link.bands, (std::vector<RateBand>{{131072, 9}}));
  EXPECT_EQ(hbmGbps(t->device, 65536), 30);
  EXPECT_EQ(hbmGbps(t->device, 65537), 12);
  EXPECT_EQ(hbmGbps(t->device, 1048577), 6);
  EXPECT_EQ(linkGbps(t->fabric.link, 1000), 9);
  EXPECT_EQ(linkGbps(t->fabric.link, 131073), 2.5);
  auto back = parseTopology(dumpYaml(*t), "<dump>");
  ASSERT_TRUE(back) << back.status().message();
  EXPECT_EQ(*back, *t);
  auto plain = parseTopology(kCustom, "custom.yaml");
  ASSERT_TRUE(plain) << plain.status().message();
  EXPECT_TRUE(plain->device.hbmBands.empty());
  EXPECT_EQ(hbmGbps(plain->device, 1), 820.5);
  EXPECT_EQ(linkGbps(plain->chips[0].extraLinks[0].spec, 1), 31.5);
}

// Loads `text` from a file and expects an error naming that file, `line` and `fragment`.
void expectError(const std::string& text, int line, const std::string& fragment) {
  TempFile file("bad.yaml", text);
  auto t = loadTopology(file.path());
  ASSERT_FALSE(t) << text;
  std::string msg = t.status().message();
  EXPECT_NE(msg.find(file.path() + ":" + std::to_string(line) + ":"), std::string::npos) << msg;
  EXPECT_NE(msg.find(fragment), std::string::npos) << msg;
}

const char* const kHead = R"(name: bad
chips_per_instance: 4
device:
  kind: NeuronCore-v2
  cores_per_chip: 2
  hbm_gib_per_chip: 32
  hbm_bandwidth_gbps: 820
)";

TEST(BadFiles, NonPositiveLinkBandwidthNamesLineAndField) {
  std::string text = std::string(kHead) + R"(chips:
  - id: 0
  - id: 1
  - id: 2
  - id: 3
    links:
      - peer: 0
        class: neuronlink
        bandwidth_gbps: -5
        latency_us: 1
)";
  expectError(text, 16, "chips[3].links[0]: 'bandwidth_gbps' must be a positive number");
}

TEST(BadFiles, FieldErrors) {
  expectError(std::string(kHead) + "lnc: 3\n", 8, "lnc: must be 1 or 2");
  expectError(std::string(kHead) + "fabric: {kind: ring}\n", 8, "'kind' must be none, torus2d");
  expectError(std::string(kHead) +
                  "fabric:\n  kind: torus2d\n  rows: 4\n  cols: 4\n"
                  "  link: {class: neuronlink, bandwidth_gbps: 96, latency_us: 1}\n",
              8, "fabric: rows x cols (4 x 4) must equal chips_per_instance (4)");
  expectError(std::string(kHead) +
                  "network: {class: infiniband, bandwidth_gbps: 1, "
                  "latency_us: 1, nics: 1}\n",
              8, "network: 'class' must be neuronlink, efa or pcie");
  expectError(std::string(kHead) +
                  "fabric:\n  kind: switch\n"
                  "  link: {class: neuronlink, bandwidth_gbps: 96, latency_us: 1}\n"
                  "  cross_link: {class: neuronlink, bandwidth_gbps: 9, latency_us: 1}\n",
              11, "fabric.cross_link: only a switch across instances >= 2 has one");
  expectError(std::string(kHead) + "bandwith: 3\n", 8, "unknown field 'bandwith'");
  expectError("name: x\nchips_per_instance: 1\n", 1, "device: missing");
  expectError(std::string(kHead) +
                  "chips:\n  - id: 1\n    links:\n"
                  "      - {peer: 9, class: pcie, bandwidth_gbps: 1, latency_us: 1}\n",
              11, "chips[0].links[0].peer: 9 is not another chip");
  expectError("name: [unclosed\n", 2, "");
  const std::string link =
      "fabric:\n  kind: switch\n  link: {class: pcie, bandwidth_gbps: 1, "
      "latency_us: 1, bands: ";
  expectError(std::string(kHead) + link + "[{bytes: 8, gbps: 2}, {bytes: 8, gbps: 1}]}\n", 10,
              "fabric.link.bands[1]: 'bytes' must grow from band to band");
  expectError(std::string(kHead) + link + "[{bytes: 8, gbps: 0}]}\n", 10,
              "fabric.link.bands[0]: 'gbps' must be a positive number");
  expectError(std::string(kHead) + link + "{bytes: 8}}\n", 10, "'bands' must be a list");
}

// Rails: which NIC each chip sends through (network.nic_of_chip), written in every built-in with
// a network, defaulted to consecutive chips sharing evenly, and checked.
TEST(Rails, NicOfChip) {
  const std::vector<int> pairs = {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7};
  EXPECT_EQ(builtin("trn1.32xlarge").network->nicOfChip, pairs);
  for (const char* name : {"trn1n.32xlarge", "trn2.48xlarge", "trn2-ultraserver"}) {
    const std::vector<int> nics = builtin(name).network->nicOfChip;
    ASSERT_EQ(nics.size(), 16u) << name;
    for (int c = 0; c < 16; ++c) EXPECT_EQ(nics[c], c) << name;
  }
  const std::string net = "network: {class: efa, bandwidth_gbps: 10, latency_us: 15, nics: 2";
  auto fallback = parseTopology(std::string(kHead) + net + "}\n", "t.yaml");
  ASSERT_TRUE(fallback) << fallback.status().message();
  EXPECT_EQ(fallback->network->nicOfChip, (std::vector<int>{0, 0, 1, 1}));
  auto given = parseTopology(std::string(kHead) + net + ", nic_of_chip: [1, 0, 0, 1]}\n", "t");
  ASSERT_TRUE(given) << given.status().message();
  EXPECT_EQ(given->network->nicOfChip, (std::vector<int>{1, 0, 0, 1}));
  auto back = parseTopology(dumpYaml(*given), "<dump>");
  ASSERT_TRUE(back) << back.status().message();
  EXPECT_EQ(*back, *given);
  expectError(std::string(kHead) + net + ", nic_of_chip: [0, 1]}\n", 8,
              "network.nic_of_chip: 2 entries, one per chip (4) expected");
  expectError(std::string(kHead) + net + ", nic_of_chip: [0, 1, 2, 0]}\n", 8,
              "network.nic_of_chip: chip 2 names NIC 2, not one of 0..1");
  expectError(std::string(kHead) + net + ", nic_of_chip: [0, 0, 0, 0]}\n", 8,
              "network.nic_of_chip: NIC 1 serves no chip");
  expectError(std::string(kHead) + net + ", nic_of_chip: [0, x, 1, 1]}\n", 8,
              "entry 1 must be an integer");
}

TEST(BadFiles, MissingFileAndUnknownName) {
  auto missing = loadTopology("/nonexistent/dir/t.yaml");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.status().message().find("/nonexistent/dir/t.yaml"), std::string::npos);
  auto unknown = loadTopology("trn9.huge");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.status().message().find("trn1.32xlarge"), std::string::npos)
      << "lists the known names: " << unknown.status().message();
}

TEST(SearchPath, EnvDirectoryComesFirst) {
  TempFile file("trn1.32xlarge.yaml", std::string(kHead));  // shadows the built-in
  ScopedEnv env("TRNCCL_TOPOLOGY_PATH", file.dir());
  auto t = loadTopology("trn1.32xlarge");
  ASSERT_TRUE(t) << t.status().message();
  EXPECT_EQ(t->name, "bad");
  EXPECT_EQ(topologySearchPath().front(), file.dir());
}

}  // namespace
}  // namespace trnccl::topology
