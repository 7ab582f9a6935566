#include "algorithms/cost.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace trnccl::algorithms {
namespace {

// What one more concurrent message per step costs (a descriptor and a semaphore of the DMA
// engine): it is what makes one channel the choice for small messages.
constexpr double kChannelStepUs = 0.2;

// The hardware's link with the transport's cost added: latencies add, the slower bandwidth
// wins.
LinkCost over(LinkCost hw, const TransportCost* t) {
  if (t == nullptr) return hw;
  if (t->bandwidthGBs > 0 && t->bandwidthGBs < hw.bandwidth) {
    hw = {hw.latencyUs, t->bandwidthGBs};  // the transport's own limit, not a shared link's
  }
  hw.latencyUs += t->latencyUs;
  return hw;
}

// The hardware alone, for costs that scale with hops the transport pays only once.
LinkModel withoutTransports(LinkModel m) {
  m.transports = {};
  return m;
}

}  // namespace

bool withTransports(const LinkModel& m) {
  return m.transports.intra != nullptr || m.transports.inter != nullptr;
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
LinkCost dmaLink(const LinkModel& m) {
  return over({m.chipLatencyUs, m.chipBandwidth / std::max(1, m.ranksPerChip)}, m.transports.intra);
}
LinkCost crossLink(const LinkModel& m) {
  return m.crossBandwidth > 0 ? over({m.crossLatencyUs, m.crossBandwidth}, m.transports.intra)
                              : intraLink(m);
}
LinkCost flatLink(const LinkModel& m) {
  if (m.oneChip) return dmaLink(m);
  return m.multiInstance ? interLink(m) : crossLink(m);
}

LinkCost ringStepLink(const LinkModel& m, LinkCost link) {
  // The hardware's part only: every step is a transport message, whichever hop it takes.
  const TransportCost* t = m.multiInstance ? m.transports.inter : m.transports.intra;
  const double hw = link.latencyUs - (t != nullptr ? t->latencyUs : 0);
  const int perChip = std::max(1, m.ranksPerChip);
  link.latencyUs -= (perChip - 1) * (hw - m.chipLatencyUs) / perChip;
  return link;
}

// Hops slow the hardware's path; the transport's message costs once (a transfer is one
// message on one connection however many links it crosses).
LinkCost partnerLink(const LinkModel& m) {
  const double hops = std::max(1.0, m.meshHops / 2);
  return over({m.intraLatencyUs * hops, m.intraBandwidth / hops}, m.transports.intra);
}

namespace {
// A level's pairs by where the partner is, on the hardware alone (LevelClasses).
struct LevelHardware {
  LevelClasses links;
  double offChip = 0, across = 0;  // shares of the pairs
  bool network = false;            // the other instances' pairs cross the network
};

LevelHardware levelHardware(const LinkModel& m, const PartnerLevel& l) {
  const double perChip = std::max(1, m.ranksPerChip);
  const double hops = std::max(1.0, l.hops);
  const double senders =
      std::max(1.0, l.chipSenders > 0 ? l.chipSenders : std::round(l.offChip * perChip));
  LevelHardware h;
  h.offChip = l.offChip;
  h.across = std::min(l.offInstance, l.offChip);
  h.links.chip = {m.chipLatencyUs, m.chipBandwidth / perChip};
  h.links.offChip = {m.intraLatencyUs * hops, m.intraBandwidth / (hops * senders), hops * senders};
  h.links.offInstance = h.links.offChip;
  if (m.multiInstance) {
    // A rank's share of its rail (interBandwidth counts the rail's ranks), whose send queue
    // issues their messages one after another.
    h.links.offInstance = {m.interLatencyUs + std::max(0, m.ranksPerRail - 1) * m.messageUs,
                           m.interBandwidth, static_cast<double>(std::max(1, m.ranksPerRail))};
    if (l.railSenders > 0 && l.railSenders < m.ranksPerRail) {  // fewer of them send
      h.links.offInstance = {m.interLatencyUs + (l.railSenders - 1) * m.messageUs,
                             m.railBandwidth / l.railSenders, l.railSenders};
    }
    h.network = true;
  } else if (m.crossBandwidth > 0) {
    h.links.offInstance = {m.crossLatencyUs * hops, m.crossBandwidth / (hops * senders),
                           hops * senders};
  }
  return h;
}
}  // namespace

LevelClasses levelClasses(const LinkModel& m,
                          const std::array<PartnerLevel, kPartnerLevels>& levels, int k) {
  if (k < 0 || k >= std::min(m.partnerLevels, kPartnerLevels)) {
    const LinkCost l = partnerLink(m);
    return {l, l, l};
  }
  LevelHardware h = levelHardware(m, levels[static_cast<size_t>(k)]);
  h.links.chip = over(h.links.chip, m.transports.intra);
  h.links.offChip = over(h.links.offChip, m.transports.intra);
  h.links.offInstance =
      over(h.links.offInstance, h.network ? m.transports.inter : m.transports.intra);
  return h.links;
}

LinkCost levelLink(const LinkModel& m, const std::array<PartnerLevel, kPartnerLevels>& levels,
                   int k) {
  if (k < 0 || k >= std::min(m.partnerLevels, kPartnerLevels)) return partnerLink(m);
  const LevelHardware h = levelHardware(m, levels[static_cast<size_t>(k)]);
  // The bandwidth is the slowest class's (every rank moves the level's bytes at once); the
  // latency each class's weighted by its share of the pairs (a rank's path through the levels
  // meets the slow pairs that often).
  double latency = 0, bandwidth = std::numeric_limits<double>::infinity();
  double sharers = 1;
  if (h.offChip < 1) {  // partners on the chip: the rank's own DMA queue
    latency = (1 - h.offChip) * h.links.chip.latencyUs;
    bandwidth = h.links.chip.bandwidth;
  }
  const TransportCost* t = m.transports.intra;
  if (h.offChip > 0) {
    const LinkCost path = h.across > 0 ? h.links.offInstance : h.links.offChip;
    if (h.across > 0 && h.network) t = m.transports.inter;
    const double within = (h.offChip - h.across) * h.links.offChip.latencyUs;
    latency += h.across > 0 ? within + h.across * path.latencyUs : h.offChip * path.latencyUs;
    if (path.bandwidth < bandwidth) sharers = path.sharers;
    bandwidth = std::min(bandwidth, path.bandwidth);
  }
  return over({latency, bandwidth, sharers}, t);
}

double reduceUs(const LinkModel& m, double bytes) {
  return 3 * bytes / (std::max(1e-9, m.hbmBandwidth) * 1e3);
}

double copyUs(const LinkModel& m, double bytes) {
  double gbs = m.hbmBandwidth / 2;
  for (const TransportCost* t : {m.transports.intra, m.transports.inter}) {
    if (t != nullptr && t->copyGBs > 0) gbs = std::min(gbs, t->copyGBs);
  }
  return bytes / (std::max(1e-9, gbs) * 1e3);
}

double ownBlockCopyUs(const CollArgs& a, const LinkModel& m) {
  return a.coll == Collective::kAllGather ? copyUs(m, totalBytes(a) / std::max(1, a.nranks)) : 0;
}

double sharedReduceUs(const LinkModel& m, const LinkCost& link, double bytes) {
  const double transfer = bytes / (link.bandwidth * 1e3);
  const double own = transfer / std::max(1.0, link.sharers);
  return transfer - own + std::max(own, reduceUs(m, bytes));
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

namespace {
// The flat link, or a rank's DMA queue where that is slower: a ring over whole chips steps from
// core to core of a chip as often as it leaves the chip (a switch's port is wider than the
// DMA queue of one of its chip's cores).
LinkCost ringLink(const LinkModel& m, int channels) {
  LinkCost link = flatLink(m);
  if (m.ranksPerChip > 1) {
    link.bandwidth = std::min(link.bandwidth, dmaLink(m).bandwidth / std::max(1, channels));
  }
  return link;
}
}  // namespace

double ringReducePhase(int k, double bytes, LinkCost link, const LinkModel& m) {
  if (k <= 1) return 0;
  const double step = bytes / k;
  return (k - 1) * (link.latencyUs + std::max(step / (link.bandwidth * 1e3), reduceUs(m, step)));
}

double flatPhase(const CollArgs& a, const LinkModel& m) {
  return ringPhase(a.nranks, totalBytes(a), ringLink(m, 1));
}

double channelsRingPhase(int k, double bytes, LinkCost link, int channels,
                         const LinkModel* reduce) {
  channels = std::max(1, channels);
  link.latencyUs += (channels - 1) * kChannelStepUs;
  return reduce != nullptr ? ringReducePhase(k, bytes / channels, link, *reduce)
                           : ringPhase(k, bytes / channels, link);
}

namespace {
// What a flat ring runs: a reduce-scatter phase, an all-gather phase, or the fused all-reduce.
enum class RingRun { kReduceScatter, kAllGather, kAllReduce };

double flatRing(const CollArgs& a, const LinkModel& m, RingRun run) {
  const bool reduce = run != RingRun::kAllGather;
  const int channels = std::max(1, a.channels);
  LinkCost link = flatLink(m);
  const int instances = a.shape != nullptr ? a.shape->instances.numRows() : 0;
  if (m.multiInstance && instances > 1 && !withTransports(m)) {
    link = instancesRingLink(m, a.nranks, instances, channels);
    link.latencyUs += (channels - 1) * kChannelStepUs;
    if (run == RingRun::kAllReduce) {
      return pipelinedRingAllReduce(a, m, a.nranks, totalBytes(a) / channels, link);
    }
    return pipelinedRingPhase(a, m, a.nranks, totalBytes(a) / channels, link, reduce);
  }
  // Across instances the per-rank EFA share is the bottleneck, which more rings don't widen;
  // nor a rank's DMA queue, which every ring's step within the chip takes.
  if (m.multiInstance) link.bandwidth /= channels;
  if (m.ranksPerChip > 1) {
    link.bandwidth = std::min(link.bandwidth, dmaLink(m).bandwidth / channels);
  }
  link.latencyUs += transportMessagesUs(m, channels);  // each ring's message on the transport
  if (m.multiInstance) {
    const double rs = channelsRingPhase(a.nranks, totalBytes(a), link, channels, &m);
    const double ag = channelsRingPhase(a.nranks, totalBytes(a), link, channels);
    return run == RingRun::kAllReduce ? rs + ag : (reduce ? rs : ag);
  }
  // A ring over whole chips (ringStepLink); where the fabric joins instances, one ring's steps
  // of three kinds (fabricRingLink). Channels' rings share groups, each waiting for every
  // ring's step, which leave their chips at other ranks: slower than one ring's average step
  // (not modelled: every chip step priced as the crossing stands for it, docs/SIMULATOR.md).
  const int servers = a.nranks / std::max(1, m.ranksPerServer);
  link = m.crossBandwidth > 0 && servers > 1 && channels == 1 && !withTransports(m)
             ? fabricRingLink(m, link, servers / static_cast<double>(a.nranks))
             : ringStepLink(m, link);
  link.latencyUs += (channels - 1) * kChannelStepUs;
  if (run == RingRun::kAllReduce) {
    return pipelinedRingAllReduce(a, m, a.nranks, totalBytes(a) / channels, link);
  }
  return pipelinedRingPhase(a, m, a.nranks, totalBytes(a) / channels, link, reduce);
}
}  // namespace

namespace {
// The messages of a flat ring across instances, every rank's, which channelsRingPhase leaves
// out (pipelinedRingPhase counts its own): each channel's part in iterations of a slice per
// member, each iteration n - 1 steps a phase.
double acrossRingMessagesUs(const CollArgs& a, const LinkModel& m, int phases) {
  if (!m.multiInstance) return 0;
  const int n = a.nranks, channels = std::max(1, a.channels);
  const double round =
      static_cast<double>(n) * static_cast<double>(std::max<size_t>(1, a.sliceBytes));
  const double iterations = std::max(1.0, std::ceil(totalBytes(a) / channels / round));
  return hostMessagesUs(a, m, static_cast<double>(n) * channels * iterations * phases * (n - 1));
}
}  // namespace

double flatRingPhase(const CollArgs& a, const LinkModel& m) {
  return flatRing(
             a, m,
             a.coll == Collective::kReduceScatter ? RingRun::kReduceScatter : RingRun::kAllGather) +
         acrossRingMessagesUs(a, m, 1);
}

double flatRingAllReduce(const CollArgs& a, const LinkModel& m) {
  return flatRing(a, m, RingRun::kAllReduce) + acrossRingMessagesUs(a, m, 2);
}

namespace {
// The messages a direct round's busiest sender issues beyond its bytes, one after another: in
// its DMA queue to its own instance (`local` ranks), and across instances in its rail's send
// queue with those of the rail's other senders. owners 0: every rank sends to every other.
double directQueueUs(const CollArgs& a, const LinkModel& m, int local, int owners,
                     OwnersRound kind) {
  const int n = a.nranks, remote = n - local;
  if (owners <= 0) {
    return extraMessagesUs(m, local) +
           (m.multiInstance ? std::max(1, m.ranksPerRail) * extraMessagesUs(m, remote + 1) : 0);
  }
  if (kind == OwnersRound::kToOwners) {  // each rank's messages to the owners, a rail's ranks'
    return (m.multiInstance ? std::max(1, m.ranksPerRail) : 1) * owners * m.messageUs;
  }
  // The owners (the first ranks: they fill the first rails) send to every rank.
  return extraMessagesUs(m, local) +
         (m.multiInstance
              ? std::clamp(owners, 1, std::max(1, m.ranksPerRail)) * extraMessagesUs(m, remote + 1)
              : 0);
}

// A direct round across instances on the modelled hardware, every rank sending to every other
// at once: its messages to the `local` ranks of its instance make that instance's round (the
// busiest resource's bytes, or the last to land of those its DMA queue issues), while those to
// the `remote` ranks leave through its rail's NIC, whose send queue takes the rail's ranks'
// messages one after another (a message's issue and its bytes apiece, as the simulator's NIC
// charges them); they land the network's latency after. The two overlap: the round lasts the
// longer. (The NIC no longer stands in for the local messages, nor torus hops for its bytes.)
// `railSenders`: the rail's ranks that send such a round (all of them, or the owners among
// them when only the owners send).
double directAcrossUs(const LinkModel& m, double bytesPerPeer, int local, int remote,
                      int railSenders) {
  double within = 0;
  if (local > 1) {
    within = std::max(m.directReachUs, m.intraLatencyUs + bytesPerPeer * m.directUsPerByte);
  }
  const double rail = railSenders * remote * (m.messageUs + bytesPerPeer / (m.railBandwidth * 1e3));
  return std::max(within, m.interLatencyUs + rail);
}

double directRoundOf(const CollArgs& a, const LinkModel& m, double bytesPerPeer, int owners,
                     OwnersRound kind) {
  const int n = a.nranks;
  if (n <= 1) return 0;
  // Messages per sender on the transport: to the owners only, else to every peer.
  const int messages = owners > 0 && kind == OwnersRound::kToOwners ? owners : n - 1;
  // A rank issues its messages one after another while the fabric carries their bytes: the
  // round lasts until its last message lands, whether the issuing or the busiest resource's
  // bytes take longer (the last bytes still cross the farthest route).
  if (!m.switched || m.multiInstance) {
    // The n-1 messages cross the torus links they share, so each is slowed by the average hops
    // of a direct transfer. Across instances the messages to the other instances' ranks also
    // queue on the rank's rail, one after another, with those of the rail's other ranks; their
    // route is the NICs', whatever the torus hops.
    const double hops = std::max(1.0, m.meshHops);
    // Hops slow the hardware's path, not the transport's message.
    const LinkCost hw = flatLink(withoutTransports(m));
    // Within an instance the round's last bytes land after the farthest route's latency.
    const double reach =
        m.multiInstance ? 1 : std::max(1.0, m.meshMaxHops > 0 ? m.meshMaxHops : hops);
    const LinkCost flat = over({hw.latencyUs * reach, hw.bandwidth / hops},
                               m.multiInstance ? m.transports.inter : m.transports.intra);
    // The ranks a rank reaches through its DMA queue: its instance's, or every rank where the
    // fabric joins the instances (LinkModel::directReachUs counts them alike).
    const Grid* instances = a.shape != nullptr ? &a.shape->instances : nullptr;
    const int local = m.multiInstance && instances != nullptr && !instances->rows.empty()
                          ? static_cast<int>(instances->rows[0].size())
                          : n;
    double bytesUs = (n - 1) * bytesPerPeer / (flat.bandwidth * 1e3);
    if (owners <= 0 && !m.multiInstance && m.directUsPerByte > 0) {  // the busiest link
      const TransportCost* t = m.transports.intra;
      bytesUs = bytesPerPeer * m.directUsPerByte;
      if (t != nullptr && t->bandwidthGBs > 0) {
        bytesUs = std::max(bytesUs, (n - 1) * bytesPerPeer / (t->bandwidthGBs * 1e3));
      }
    }
    if (owners <= 0 && m.multiInstance && local < n && m.directUsPerByte > 0 &&
        !withTransports(m)) {
      return directAcrossUs(m, bytesPerPeer, local, n - local, std::max(1, m.ranksPerRail));
    }
    // The owners (the first ranks: they fill the first rails) send to every rank: as above,
    // their messages within the instance from their DMA queues while the rails' send queues
    // take those to the other instances. Adding the two made a mesh all-reduce of 8 floats
    // 1.14x too dear on 2 trn1n instances (docs/SIMULATOR.md, tenth session).
    if (owners > 0 && kind == OwnersRound::kFromOwners && m.multiInstance && local < n &&
        m.directUsPerByte > 0 && !withTransports(m)) {
      return directAcrossUs(m, bytesPerPeer, local, n - local,
                            std::clamp(owners, 1, std::max(1, m.ranksPerRail)));
    }
    double issued = flat.latencyUs + directQueueUs(a, m, local, owners, kind);
    if (local == n && m.directReachUs > 0 && kind == OwnersRound::kFromOwners) {
      // Every message of a rank's round, in the order it issues them, on its route.
      const TransportCost* t = m.transports.intra;
      issued = m.directReachUs + (t != nullptr ? t->latencyUs : 0);
    }
    return std::max(issued, flat.latencyUs + bytesUs) + transportMessagesUs(m, messages);
  }
  const int perChip = std::clamp(m.ranksPerChip, 1, n);
  const int perServer = std::clamp(m.ranksPerServer, perChip, n);
  const DirectPeers peers{perChip - 1, n - perChip, n - perServer, perChip};
  // The rank's DMA queue issues its messages one after another, each a transport message.
  return std::max(extraMessagesUs(m, messages + 1) + switchRound(m, peers, 0),
                  switchRound(m, peers, bytesPerPeer)) +
         transportMessagesUs(m, messages);
}
}  // namespace

double directRound(const CollArgs& a, const LinkModel& m, double bytesPerPeer) {
  const double n = a.nranks;
  return directRoundOf(a, m, bytesPerPeer, 0, OwnersRound::kFromOwners) +
         hostMessagesUs(a, m, n * (n - 1));
}

double directOwnersRound(const CollArgs& a, const LinkModel& m, double bytesPerPeer, int owners,
                         OwnersRound kind) {
  owners = std::clamp(owners, 1, a.nranks);
  // Every rank to each owner but itself, or each owner to every other rank.
  const double messages = kind == OwnersRound::kToOwners
                              ? static_cast<double>(a.nranks - 1) * owners
                              : static_cast<double>(owners) * (a.nranks - 1);
  return directRoundOf(a, m, bytesPerPeer, owners, kind) + hostMessagesUs(a, m, messages);
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

double extraMessagesUs(const LinkModel& m, int messages) {
  return std::max(0, messages - 1) * m.messageUs;
}

}  // namespace trnccl::algorithms
