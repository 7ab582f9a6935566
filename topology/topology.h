// The topology model: what one description (an instance, or an UltraServer of several
// instances) is made of — chips with NeuronCores and HBM, the chip fabric (2D/3D torus or
// NeuronSwitch), explicit extra links, and the network between instances. Plain data that
// round-trips through YAML (loader.h), like NCCL's topology XML; builders in torus.h,
// rings.h and subgroups.h are pure functions over it.
//
// Chip ids are global within one description: chip = instance * chipsPerInstance + local.
// Bandwidths are GB/s (1e9 bytes/s, as nccl-tests prints), latencies µs.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace trnccl::topology {

enum class LinkClass : int { kNeuronLink, kEfa, kPcie };
// kNone: chips of an instance share no fabric (a single chip, or explicit links only).
// kTorus2d: rows x cols torus per instance. kTorus3d: the 2D torus of each instance plus a
// ring (Z) through the same-coordinate chips of all instances (Trn2 UltraServer).
// kSwitch: every chip of the description reaches every other through NeuronSwitch.
enum class FabricKind : int { kNone, kTorus2d, kTorus3d, kSwitch };

std::string_view linkClassName(LinkClass cls);     // "neuronlink", "efa", "pcie"
std::string_view fabricKindName(FabricKind kind);  // "none", "torus2d", "torus3d", "switch"
std::optional<LinkClass> parseLinkClass(std::string_view name);
std::optional<FabricKind> parseFabricKind(std::string_view name);

// A rate that depends on a call's working set (the bytes of the buffers one rank's steps touch,
// docs/TOPOLOGY.md "Working-set bands"): a working set of at most `bytes` moves at `gbps`.
// Measured, e.g. by trnccl-sim-calibrate on this machine, where a small working set stays in the
// caches and copies run faster than from memory.
struct RateBand {
  uint64_t bytes = 0;
  double gbps = 0;
  bool operator==(const RateBand&) const = default;
};

// The rate for a working set of `workingSet` bytes: the first of `bands` (ascending bytes) whose
// bytes are at least it; above every band (or without bands), `gbps`.
inline double bandGbps(const std::vector<RateBand>& bands, double gbps, uint64_t workingSet) {
  for (const RateBand& b : bands) {
    if (workingSet <= b.bytes) return b.gbps;
  }
  return gbps;
}

struct LinkSpec {
  LinkClass cls = LinkClass::kNeuronLink;
  double bandwidthGbps = 0;  // GB/s, one direction of one link
  double latencyUs = 0;      // per hop
  // From this many bytes a message is read in place by its receiver (shm's zero copy:
  // transports/shm/zero_copy.h): one copy per byte, the receiver's, where an ordinary message
  // takes two (the sender's into the FIFO, the receiver's out of it), so it occupies the link
  // for half its bytes' time. 0: never (YAML `in_place_bytes`).
  uint64_t inPlaceBytes = 0;
  // bandwidthGbps for smaller working sets (YAML `bands`); empty: bandwidthGbps always.
  std::vector<RateBand> bands = {};
  bool operator==(const LinkSpec&) const = default;
};

// A link's bandwidth for a call whose working set is `workingSet` bytes (LinkSpec::bands).
inline double linkGbps(const LinkSpec& l, uint64_t workingSet) {
  return bandGbps(l.bands, l.bandwidthGbps, workingSet);
}

// The share of a message's bytes a link charges when its messages from `inPlaceBytes` on are
// read in place (LinkSpec::inPlaceBytes): half for those, one copy instead of two.
inline double linkByteShare(uint64_t inPlaceBytes, uint64_t bytes) {
  return inPlaceBytes > 0 && bytes >= inPlaceBytes ? 0.5 : 1.0;
}

// What issuing one message costs the engine that sends it, beyond its bytes: a DMA descriptor
// and a completion semaphore; across instances, a work request through the rail's EFA send
// queue. Not published, assumed (the cost model's per-message alpha: algorithms/cost.h).
inline constexpr double kMessageUs = 0.2;

// The device kind, per chip: physical NeuronCores and the HBM they share.
struct DeviceKind {
  std::string name;             // "NeuronCore-v2", "NeuronCore-v3", "NeuronCore-v4"
  int coresPerChip = 0;         // physical NeuronCores
  double hbmGibPerChip = 0;     // GiB
  double hbmBandwidthGbps = 0;  // GB/s
  // GB/s of one DMA engine (0: not described): a core's transfers to the other cores of its
  // chip are one DMA queue's, at one engine's rate (onChipLink).
  double dmaEngineGbps = 0;
  // per message sent: YAML `message_us`, else the model's kMessageUs (assumed for Trainium;
  // measured for this machine by trnccl-sim-calibrate)
  double messageUs = kMessageUs;
  // per call, once, before its first step: YAML `call_us`, else 0. What the host runtime pays
  // for a call whatever its algorithm (the enqueue, the executor's start and end); measured for
  // this machine by trnccl-sim-calibrate, not described for Trainium. The same for every
  // algorithm, so the tuner's estimates leave it out; the engine charges it (sim/engine.h).
  double callUs = 0;
  // per message read in place (a link's in_place_bytes) whose bytes its sender wrote during the
  // call (a forward of what it received or reduced): what the reader pays beyond the bytes to
  // take lines another core has just written. YAML `in_place_fresh_us`, else 0; measured for
  // this machine by trnccl-sim-calibrate (the shm transport's descriptors), not described for
  // Trainium. The simulator's engine charges it; the tuner's estimates leave it out.
  double inPlaceFreshUs = 0;
  // hbmBandwidthGbps for smaller working sets (YAML `hbm_bands`); empty: hbmBandwidthGbps.
  std::vector<RateBand> hbmBands = {};
  bool operator==(const DeviceKind&) const = default;
};

// A chip's HBM bandwidth for a call whose working set is `workingSet` bytes (hbmBands).
inline double hbmGbps(const DeviceKind& d, uint64_t workingSet) {
  return bandGbps(d.hbmBands, d.hbmBandwidthGbps, workingSet);
}

struct Fabric {
  FabricKind kind = FabricKind::kNone;
  int rows = 0;  // torus only
  int cols = 0;
  LinkSpec link;                  // torus: one neighbour link; switch: one chip's port
  std::optional<LinkSpec> zLink;  // torus3d only: the ring across instances
  // switch only: a chip's path to the chips of other instances (servers) of the description,
  // when it is narrower than its port (a higher tier of the switch). Unset: the port.
  std::optional<LinkSpec> crossLink;
  bool operator==(const Fabric&) const = default;
};

// Between instances (or between copies of this description when a job spans several).
struct Network {
  LinkSpec link;  // cls is kEfa for every built-in; bandwidth per instance
  int nics = 0;   // NICs per instance (rails), each with bandwidth / nics
  // The NIC (rail) each chip of an instance sends through, by local chip (neuron-ls order):
  // trn1.32xlarge pairs chips on 8 NICs, Trn2 gives every chip its own. Filled by
  // finalizeTopology when the description leaves it out: consecutive chips share evenly.
  std::vector<int> nicOfChip;
  bool operator==(const Network&) const = default;
};

struct Coord {
  int row = 0, col = 0, z = 0;  // z = instance, meaningful for torus3d only
  bool operator==(const Coord&) const = default;
};

// A link written in a description by hand (chips[i].links), on top of the fabric's.
struct ExtraLink {
  int peer = 0;  // global chip id
  LinkSpec spec;
  bool operator==(const ExtraLink&) const = default;
};

struct Chip {
  int id = 0;  // global within the description
  int instance = 0;
  int local = 0;               // index within its instance (neuron-ls device number)
  std::optional<Coord> coord;  // set when the fabric is a torus
  std::vector<ExtraLink> extraLinks;
  bool operator==(const Chip&) const = default;
};

// One undirected link between chips a < b (derived from the fabric and extra links).
struct Link {
  int a = 0, b = 0;
  LinkSpec spec;
  bool zLink = false;  // a torus3d link across instances
  bool operator==(const Link&) const = default;
};

struct Topology {
  std::string name;
  std::string description;
  int instances = 1;
  int chipsPerInstance = 1;
  int lnc = 1;  // logical NeuronCore size: physical cores per rank
  DeviceKind device;
  Fabric fabric;
  std::optional<Network> network;
  std::vector<Chip> chips;  // derived by finalizeTopology, plus extraLinks from the file
  std::vector<Link> links;  // derived: fabric links, then extra links

  bool operator==(const Topology&) const = default;

  int totalChips() const { return instances * chipsPerInstance; }
  int ranksPerChip() const { return device.coresPerChip / lnc; }
  int ranksPerInstance() const { return ranksPerChip() * chipsPerInstance; }
  int totalRanks() const { return ranksPerInstance() * instances; }
  double hbmGibPerRank() const { return device.hbmGibPerChip / ranksPerChip(); }
  bool isTorus() const {
    return fabric.kind == FabricKind::kTorus2d || fabric.kind == FabricKind::kTorus3d;
  }
};

// Checks the scalar fields for consistency and derives chips and links from them. Loaders and
// hand-built topologies (tests) call it once; the result compares equal iff the inputs do.
Status finalizeTopology(Topology& topo);

// Chips linked to `chip` (global ids): torus neighbours in neuron-ls order (up, left, down,
// right), then Z neighbours, then extra links; empty for a switch (everyone is one hop).
std::vector<int> chipNeighbors(const Topology& topo, int chip);

// Latency of a transfer between cores of one chip (on-chip DMA): not published, assumed.
inline constexpr double kOnChipLatencyUs = 0.5;

// What one rank's transfers to the other cores of its chip get (on-chip DMA): one DMA engine's
// rate when the description gives it (a connection is one DMA queue, which one engine serves),
// else the rank's share of the chip's HBM bandwidth; kOnChipLatencyUs. What the simulator's
// fabric (fabric_model.h), routeBetween and the tuner's LinkModel (plan/topology_view.cc) use.
LinkSpec onChipLink(const Topology& topo);

// How bytes travel between two chips of one description.
struct Route {
  LinkSpec link;  // class and bandwidth of the narrowest hop; latencyUs summed over the hops
  int hops = 0;   // 0: same chip
};
// Same chip → 0 hops at HBM bandwidth and kOnChipLatencyUs (class kNeuronLink stands for
// on-chip DMA); an explicit
// link or a switch → 1 hop; a torus → the shortest wrap-around distance (Z hops included);
// chips of different instances without a fabric between them → the network, 1 hop.
// nullopt when the description gives no path (no network, no link).
std::optional<Route> routeBetween(const Topology& topo, int chipA, int chipB);

}  // namespace trnccl::topology
