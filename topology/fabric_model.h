// The fabric of a job on a description: every resource a transfer occupies, with the bandwidth
// and latency of the description, and the route of a transfer between two ranks. trnccl-sim runs
// schedules on it (src/sim).
//
// Resources: each direction of every NeuronLink and Z link, each chip's port into and out of a
// NeuronSwitch, each direction of every EFA NIC, and each rank's on-chip DMA queue (its transfers
// to the other cores of its chip, at topology::onChipLink's rate). A resource serves one transfer
// at a time, first come first served, at its bandwidth: messages on a link share its time, so k of
// them take k times as long.
//
// Messages: each costs the device's messageUs (topology.h kMessageUs) beyond its bytes, where it
// is issued: a message across instances in its EFA NIC's send queue (a resource's messageUs,
// shared by the rail's ranks), any other in the sending rank's own DMA queue, one after another.
//
// Routes: same chip → its on-chip DMA; a link written in the description → that link; a switch
// → the sender's port up and the receiver's port down (one hop), or between servers of a switch
// with a cross_link its narrower tier up and down instead; a torus → dimension order, Z
// first, then along the row, then along the column, each the short way round (one directed link
// per hop, latencies summed); different instances without a NeuronLink path → the sender's NIC
// out and the receiver's NIC in, at the description's EFA bandwidth divided among its NICs, a
// rank using its chip's NIC (network.nic_of_chip).
//
// In place: on a link whose description has in_place_bytes (this machine's shm transport, the
// `host` description), a message of that size or more costs each hop half its bytes
// (topology::linkByteShare: one copy instead of two).
//
// Reductions: a rank reduces at its share of its chip's HBM bandwidth (the chip's divided by its
// ranks), 3 bytes of HBM traffic per byte reduced (two reads and a write), 2 per byte copied.
//
// Working-set bands: a description may give the fabric's links (`bands`) and the HBM
// (`hbm_bands`) a rate per working set (topology::RateBand; this machine's `host` description,
// where copies of a small working set run from the caches). The rates then depend on the call:
// bytesPerUs(resource, workingSet) and hbmBytesPerUs(workingSet). resources() and
// hbmBytesPerUs() give the rates above every band. On-chip DMA and EFA NICs have no bands.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "topology/layout.h"
#include "topology/topology.h"

namespace trnccl::topology {

enum class ResourceKind : uint8_t {
  kLink,       // a NeuronLink direction (torus or Z), or a link written in the description
  kPortUp,     // a chip's port into the switch
  kPortDown,   // a chip's port out of the switch
  kCrossUp,    // a chip's path into the switch's higher tier, to other servers (cross_link)
  kCrossDown,  // ... and out of it
  kNicOut,     // an EFA NIC, sending
  kNicIn,      // an EFA NIC, receiving
  kChipDma,    // transfers between cores of one chip
};

struct Resource {
  ResourceKind kind = ResourceKind::kLink;
  int a = 0;  // links: from chip; ports and DMA: chip; NICs: instance (job-wide ids)
  int b = 0;  // links: to chip; NICs: NIC index within the instance; DMA: the core
  double bytesPerUs = 0;
  double latencyUs = 0;       // what a transfer crossing it pays (a switch or NIC hop: the way in)
  double messageUs = 0;       // an EFA NIC out: what each message costs its send queue
  uint64_t inPlaceBytes = 0;  // messages this large cost half their bytes (LinkSpec)
  int32_t bands = -1;         // FabricModel's copy of the bands of the link it models (-1: none)
};

// What a transfer from one rank to another crosses, in order.
struct Path {
  static constexpr int kMaxHops = 8;  // a 4x4x4 torus needs 6
  int32_t count = 0;
  std::array<int32_t, kMaxHops> hops{};  // resources
  double latencyUs = 0;                  // summed over the hops
  double bytesPerUs = 0;                 // the narrowest resource's bandwidth
  uint64_t inPlaceBytes = 0;             // read in place from this size on every hop (0: never)
  // What each byte of a message of `bytes` takes at the narrowest hop.
  double usPerByte(uint64_t bytes) const { return linkByteShare(inPlaceBytes, bytes) / bytesPerUs; }
};

class FabricModel {
 public:
  static Result<FabricModel> build(const Topology& topo, const Layout& layout);

  int nranks() const { return layout_.nranks; }
  const Topology& topology() const { return topo_; }
  const Layout& layout() const { return layout_; }
  const std::vector<Resource>& resources() const { return resources_; }
  // "link 3->7", "nic 2.1 out", ...: a track name for traces.
  std::string resourceName(int id) const;

  // The resources a transfer from rank `from` to rank `to` crosses; error when the description
  // gives no path between them (e.g. instances without a network).
  Result<Path> route(int from, int to) const;

  // What issuing one message costs the sending rank's DMA queue (not across instances: the NIC).
  double messageUs() const { return topo_.device.messageUs; }
  // What a call costs each rank once, before its first step (DeviceKind::callUs).
  double callUs() const { return topo_.device.callUs; }
  // What reading in place a message its sender wrote during the call costs the reader beyond its
  // bytes (DeviceKind::inPlaceFreshUs).
  double inPlaceFreshUs() const { return topo_.device.inPlaceFreshUs; }

  // Bytes per µs of HBM traffic one rank's reductions and copies get.
  double hbmBytesPerUs() const { return hbmBytesPerUs_; }

  // True when a rate depends on the call's working set (the description has bands).
  bool hasBands() const;
  // A resource's bytes per µs, and one rank's HBM bytes per µs, for a call whose working set
  // (the bytes of the buffers one rank touches) is `workingSet`: the description's band.
  double bytesPerUs(int resource, uint64_t workingSet) const;
  double hbmBytesPerUs(uint64_t workingSet) const;

 private:
  int jobChip(int rank) const;
  int linkBetween(int fromChip, int toChip) const;  // -1 when not adjacent
  Status torusRoute(int fromChip, int toChip, Path& r) const;
  Status push(int resource, Path& r) const;
  int add(ResourceKind kind, int a, int b, double gbps, double latencyUs);
  // A resource modelling the description's link `spec` (its bandwidth and bands).
  int add(ResourceKind kind, int a, int b, const LinkSpec& spec, double latencyUs);

  Topology topo_;
  Layout layout_;
  std::vector<Resource> resources_;
  // Per job chip: (neighbour chip, directed link resource) pairs, and its ports and DMA.
  std::vector<std::vector<std::pair<int, int>>> links_;
  std::vector<int> portUp_, portDown_, crossUp_, crossDown_;
  std::vector<int> dma_;  // per job chip * ranksPerChip_ + core: a rank's on-chip DMA queue
  int ranksPerChip_ = 1;
  std::vector<int> nicOut_, nicIn_;  // per job instance * nics + nic
  int nics_ = 1;
  double hbmBytesPerUs_ = 0;
  std::vector<std::vector<RateBand>> bands_;  // each distinct band list of the links
};

}  // namespace trnccl::topology
