#include "algorithms/cost.h"

#include <algorithm>
#include <cmath>

namespace trnccl::algorithms {
namespace {

// What one more concurrent message per step costs (a descriptor and a semaphore of the DMA
// engine): it is what makes one channel the choice for small messages.
constexpr double kChannelStepUs = 0.2;

// The share of a link's bandwidth a tree and Bruck's exchanges reach, as NCCL's tuning.cc rates
// them against the ring (Tree x0.85, PAT x0.75): a tree's parents take two children's chunks
// at once, Bruck's long-distance steps share links and forward only whole messages.
constexpr double kTreeEfficiency = 0.85;
constexpr double kBruckEfficiency = 0.75;

// The transports' table (TransportCost), from runs on the 2-core machine (docs/ALGORITHMS.md,
// "The transport under the links"). Latency: half a 2-rank small all-reduce (two messages per
// rank). tcp's per-message cost: mesh (three messages at once) measured slowest at 4 ranks,
// ~150 us behind kangaring at 1 KiB, so a further message costs about one message's latency
// (one thread serves them one after another).
// shm keeps the hardware's bandwidth and a DMA descriptor's per-message cost: 4-rank shm runs
// were too noisy here to rank the algorithms, so its terms leave the choices as they were.
// ofi (libfabric's tcp provider here) is taken as tcp, not measured separately.
constexpr TransportCost kShm{.latencyUs = 5, .bandwidthGBs = 0, .perMessageUs = 0.2};
constexpr TransportCost kTcp{.latencyUs = 20, .bandwidthGBs = 1.5, .perMessageUs = 20};
constexpr TransportCost kOfi = kTcp;

// The hardware's link with the transport's cost added: latencies add, the slower bandwidth
// wins.
LinkCost over(LinkCost hw, const TransportCost* t) {
  if (t == nullptr) return hw;
  const double bw = t->bandwidthGBs > 0 ? std::min(hw.bandwidth, t->bandwidthGBs) : hw.bandwidth;
  return {hw.latencyUs + t->latencyUs, bw};
}

}  // namespace

const TransportCost* transportCost(std::string_view transportName) {
  if (transportName == "shm") return &kShm;
  if (transportName == "tcp") return &kTcp;
  if (transportName == "ofi") return &kOfi;
  return nullptr;
}

LinkCost intraLink(const LinkModel& m) {
  return over({m.intraLatencyUs, m.intraBandwidth}, m.transports.intra);
}
LinkCost interLink(const LinkModel& m) {
  return over({m.interLatencyUs, m.interBandwidth}, m.transports.inter);
}
LinkCost chipLink(const LinkModel& m) {
  return over({m.chipLatencyUs, m.chipBandwidth}, m.transports.intra);
}
LinkCost crossLink(const LinkModel& m) {
  return m.crossBandwidth > 0 ? over({m.crossLatencyUs, m.crossBandwidth}, m.transports.intra)
                              : intraLink(m);
}
LinkCost flatLink(const LinkModel& m) { return m.multiInstance ? interLink(m) : crossLink(m); }

double transportMessagesUs(const LinkModel& m, int messages) {
  const TransportCost* t = m.multiInstance ? m.transports.inter : m.transports.intra;
  return t == nullptr ? 0 : std::max(0, messages - 1) * t->perMessageUs;
}

// Hops slow the hardware's path; the transport's message costs once (a transfer is one
// message on one connection however many links it crosses).
LinkCost partnerLink(const LinkModel& m) {
  const double hops = std::max(1.0, m.meshHops / 2);
  return over({m.intraLatencyUs * hops, m.intraBandwidth / hops}, m.transports.intra);
}

double totalBytes(const CollArgs& a) {
  double elem = static_cast<double>(device::dataTypeSize(a.type));
  bool perRank = a.coll == Collective::kAllGather || a.coll == Collective::kReduceScatter ||
                 a.coll == Collective::kAlltoAll || a.coll == Collective::kGather ||
                 a.coll == Collective::kScatter;
  return static_cast<double>(a.count) * elem * (perRank ? a.nranks : 1);
}

double ringPhase(int k, double bytes, LinkCost link) {
  if (k <= 1) return 0;
  return (k - 1) * (link.latencyUs + bytes / k / (link.bandwidth * 1e3));
}

double flatPhase(const CollArgs& a, const LinkModel& m) {
  return ringPhase(a.nranks, totalBytes(a), flatLink(m));
}

double channelsRingPhase(int k, double bytes, LinkCost link, int channels) {
  channels = std::max(1, channels);
  link.latencyUs += (channels - 1) * kChannelStepUs;
  return ringPhase(k, bytes / channels, link);
}

double flatRingPhase(const CollArgs& a, const LinkModel& m) {
  const int channels = std::max(1, a.channels);
  LinkCost link = flatLink(m);
  // Across instances the per-rank EFA share is the bottleneck, which more rings don't widen.
  if (m.multiInstance) link.bandwidth /= channels;
  link.latencyUs += transportMessagesUs(m, channels);  // each ring's message on the transport
  return channelsRingPhase(a.nranks, totalBytes(a), link, channels);
}

double directRound(const CollArgs& a, const LinkModel& m, double bytesPerPeer) {
  const int n = a.nranks;
  if (n <= 1) return 0;
  if (!m.switched || m.multiInstance) {
    // The n-1 messages cross the torus links they share, so each is slowed (and delayed) by the
    // average hops of a direct transfer. Across instances the messages to the other instances'
    // ranks also queue on the rank's rail, one after another.
    const double hops = std::max(1.0, m.meshHops);
    LinkModel hardware = m;  // hops slow the hardware's path, not the transport's message
    hardware.transports = {};
    const LinkCost hw = flatLink(hardware);
    const LinkCost flat = over({hw.latencyUs * hops, hw.bandwidth / hops},
                               m.multiInstance ? m.transports.inter : m.transports.intra);
    const Grid* instances = a.shape != nullptr ? &a.shape->instances : nullptr;
    const int local = instances != nullptr && !instances->rows.empty()
                          ? static_cast<int>(instances->rows[0].size())
                          : n;
    const double queued = m.multiInstance ? extraMessagesUs(n - local + 1) : 0;
    return flat.latencyUs + queued + transportMessagesUs(m, n - 1) +
           (n - 1) * bytesPerPeer / (flat.bandwidth * 1e3);
  }
  const int perChip = std::clamp(m.ranksPerChip, 1, n);
  const int perServer = std::clamp(m.ranksPerServer, perChip, n);
  return transportMessagesUs(m, n - 1) +
         switchRound(m, {perChip - 1, n - perChip, n - perServer, perChip}, bytesPerPeer);
}

double directBlockRound(const CollArgs& a, const LinkModel& m) {
  return directRound(a, m, totalBytes(a) / a.nranks);
}

double switchRound(const LinkModel& m, DirectPeers peers, double bytesPerPeer) {
  // Every rank of a chip sends at once: the chip's DMA copies what stays on the chip, its port
  // carries what leaves it, and the higher tier what leaves the server.
  const double perChip = std::max(1, peers.chipRanks);
  const LinkCost chip = chipLink(m), port = intraLink(m), cross = crossLink(m);
  double us = perChip * peers.onChip * bytesPerPeer / (chip.bandwidth * 1e3);
  us = std::max(us, perChip * peers.offChip * bytesPerPeer / (port.bandwidth * 1e3));
  us = std::max(us, perChip * peers.offServer * bytesPerPeer / (cross.bandwidth * 1e3));
  const double latency =
      peers.offServer > 0 ? cross.latencyUs : (peers.offChip > 0 ? port.latencyUs : chip.latencyUs);
  return latency + us;
}

double extraMessagesUs(int messages) { return std::max(0, messages - 1) * kChannelStepUs; }

double treeAllReduceTime(double bytes, double chunkBytes, const std::vector<TreeLevel>& levels) {
  const double half = bytes / 2;
  const double chunk = std::max(1.0, std::min(chunkBytes, half));
  const double chunks = std::max(1.0, std::ceil(half / chunk));
  double climb = 0, steady = 0;
  for (const TreeLevel& l : levels) {
    const double perChunk = chunk / (kTreeEfficiency * l.link.bandwidth * 1e3);
    climb += l.link.latencyUs + l.fanIn * perChunk;
    steady = std::max(steady, 2 * l.fanIn * perChunk);
  }
  return 2 * climb + (chunks - 1) * steady;
}

double bruckPhase(const CollArgs& a, const LinkModel& m) {
  const int n = a.nranks;
  const double bytes = totalBytes(a);
  LinkCost link = interLink(m);
  if (!m.multiInstance) {
    // The late steps, which move the most blocks, reach furthest: a direct transfer's hops.
    const double hops = std::max(1.0, m.meshHops / 2);
    link = over({m.intraLatencyUs * hops, m.intraBandwidth / std::max(1.0, m.meshHops)},
                m.transports.intra);
  }
  double t = 0;
  for (int d = 1; d < n; d *= 2) {
    t += link.latencyUs +
         std::min(d, n - d) * (bytes / n) / (kBruckEfficiency * link.bandwidth * 1e3);
  }
  return t;
}

}  // namespace trnccl::algorithms
