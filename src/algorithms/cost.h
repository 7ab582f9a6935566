// The cost model's vocabulary: what the links between a communicator's ranks cost on the
// modelled hardware (the topology description, not the emulation host), and the phase formulas
// the algorithms' estimates (Algorithm::estimate) are written in. One model: the tuner
// (plan/planner.cc) compares the estimates, and anything else that times schedules on the
// modelled links reads the same LinkModel and the same estimates.
#pragma once

#include <algorithm>
#include <array>
#include <string_view>
#include <vector>

#include "algorithms/algorithm.h"

namespace trnccl::algorithms {

// What a message costs on one of the transports that carry the emulation's bytes, on top of
// the modelled hardware: a message's latency end to end (wake-ups, system calls), the
// bandwidth one connection reaches (0: no limit of its own), and what each further message a
// rank has in flight at once costs (a thread copies and pushes them one after another).
// Measured on the 2-core test machine (docs/ALGORITHMS.md, "The tuner"); the communicator
// picks one by its connections' transport name (transportCost).
// And copyGBs: how fast a rank copies within its own memory (a schedule's local copy, the
// executor's memmove) while every rank does: on the emulation's host, not the modelled HBM
// (0: the HBM's).
// And hostMessageUs: what one message of a call costs the host's cores, whichever rank sends
// it (system calls and wake-ups at both ends): the ranks of a host share its cores, so a call's
// messages beyond what the cores run side by side wait for one (hostMessagesUs). 0: none.
// And reduceGBs: how fast a rank folds a message it has received whole into its buffer, on the
// host, once the call's buffers outgrow the host's cache, cacheBytes (hostReduceUs; 0: the
// HBM's reduction).
struct TransportCost {
  double latencyUs = 0;
  double bandwidthGBs = 0;
  double perMessageUs = 0;
  double copyGBs = 0;
  double hostMessageUs = 0;
  double reduceGBs = 0;
  double cacheBytes = 0;
};

// The table: "shm", "tcp", "ofi"; nullptr for any other name.
const TransportCost* transportCost(std::string_view transportName);

// The transports between this communicator's ranks: within an instance, and across instances
// (nullptr: none, the modelled hardware alone, as trnccl-sim and trnccl-topo estimate).
struct TransportTerms {
  const TransportCost* intra = nullptr;
  const TransportCost* inter = nullptr;
};

// The partners at distance 2^k of every rank at once (halving/doubling's r and r ^ 2^k; Bruck's
// r and r + 2^k; the double binary tree's edges that long), from the description's routes
// between them.
struct PartnerLevel {
  double offChip = 1;      // share of the pairs on different chips
  double hops = 1;         // average hops of those pairs' routes (a switch or the network: 1)
  double offInstance = 0;  // share of the pairs on different instances
  // Average links between instances of the fabric (Z links) on the routes of the pairs that
  // cross them (0: none, or the network): each carries the transfers of the chips in between.
  double crossHops = 0;
  // The double binary tree's edges (few of a level on a chip or an instance): the busiest
  // chip's ranks sending off the chip, and the busiest NIC's sending across the network
  // (children only: a parent's two are TreeLevel::fanIn). 0: every rank of the chip at
  // offChip's share, every rank of the rail (LinkModel::ranksPerRail).
  double chipSenders = 0;
  double railSenders = 0;
};
// Levels k = 0 .. kPartnerLevels-1 (distance 1 .. 2^15); a fixed array, so that copying a
// LinkModel never allocates.
inline constexpr int kPartnerLevels = 16;

// What the model knows of the links between this communicator's ranks (filled from the
// topology description by plan::describeTopology).
struct LinkModel {
  double intraLatencyUs = 1.5;  // one NeuronLink hop
  double intraBandwidth = 96;   // GB/s per neighbour link
  double interLatencyUs = 15;   // EFA, HBM to HBM
  // GB/s per rank across instances: its rail's NIC (railBandwidth) shared by the ranks of its
  // instance on that NIC (ranksPerRail). Rails run in parallel, so this is also a rank's share
  // when every rank of every rail talks across instances at once.
  double interBandwidth = 12.5;
  double railBandwidth = 12.5;  // GB/s of one EFA NIC (the instance's EFA / its NICs)
  int ranksPerRail = 1;         // ranks of an instance on its busiest NIC
  double meshHops = 1;          // average hops of a direct transfer (1 on a switch)
  double meshMaxHops = 0;       // the farthest direct transfer's hops (0: unknown)
  // A direct round among the ranks of one instance, every rank sending to every other at once:
  // µs per byte of one message on the busiest resource of the fabric (the pairs whose routes
  // cross it, over its bandwidth). 0: unknown (meshHops stands in).
  double directUsPerByte = 0;
  // The same round's messages without their bytes: each rank issues them to r+1, r+2, ... in
  // turn (messageUs apiece in its DMA queue), and the round ends when the last to land, the
  // k-th issued at k messageUs plus its route's latency, lands (not always the farthest, nor
  // the last issued). 0: unknown (meshMaxHops and the messages stand in).
  double directReachUs = 0;
  bool multiInstance = false;  // ranks span instances joined by the network
  // What issuing one message costs the sender's DMA engine or EFA NIC beyond its bytes (the
  // description's device, topology::kMessageUs): the simulator charges the same.
  double messageUs = 0.2;
  // The cores of one chip: copies through the chip's DMA engines and HBM.
  double chipLatencyUs = 0.5;
  double chipBandwidth = 820;  // GB/s per chip
  int ranksPerChip = 1;
  // Every rank of the communicator is a core of one chip: what any algorithm crosses is a
  // rank's DMA queue to its neighbour cores (flatLink), never a NeuronLink or a switch port.
  bool oneChip = false;
  // The fabric's narrower path between instances of one description, set when the ranks span
  // them: a 3D torus's Z links, a switch's higher tier. crossBandwidth 0: none.
  double crossLatencyUs = 0;
  double crossBandwidth = 0;  // GB/s per link (Z) or per chip (switch)
  // With multiInstance, the instances of one copy of the description its fabric joins (the
  // cross path above), the network joining only the copies: 64 servers of
  // trn3-ultraserver-gen2 are 2 copies of 36 and 28, 62 of a ring's server steps on the
  // switch's higher tier and 2 on the network. 1: the network joins every instance.
  int fabricInstances = 1;
  // NeuronSwitch: intraBandwidth is a chip's port, shared by its ranks' direct transfers;
  // ranksPerServer ranks share the switch's lower tier.
  bool switched = false;
  int ranksPerServer = 1;
  // GB/s of HBM one rank's reductions and copies get (its share of the chip's).
  double hbmBandwidth = 410;
  // Partners at distance 2^k (partnerLevels of them known; 0: none, meshHops stands in).
  int partnerLevels = 0;
  std::array<PartnerLevel, kPartnerLevels> xorPartners{}, shiftPartners{}, treePartners{};
  // A ring over an instance's ranks in rank order (the hierarchy's rows): the average latency
  // of its steps from one chip to the next, wrapping round, as the description routes them.
  // Chips consecutive in number need not be neighbours (on a 4 x 4 torus chip 3 to 4 and 15 to
  // 0 are 2 hops). 0: unknown (intraLatencyUs).
  double instanceRingLatencyUs = 0;
  // The emulation's transports (set by the communicator once connected); they add to every
  // link cost below.
  TransportTerms transports;
};

// Whether the emulation's transports price this communicator's links (the library's own
// picks), not the modelled hardware alone (trnccl-sim, trnccl-topo, the tuner sweep). Where an
// estimate follows the simulator more closely than the transport terms were measured against,
// the form they were measured with stays for them: moving the library's picks over shm and tcp
// needs measurements of the emulation, not the simulator (docs/SIMULATOR.md, eighth session).
bool withTransports(const LinkModel& m);

// One class of link: latency per transfer, and bandwidth in GB/s (= 1e3 bytes per us). When
// `sharers` transfers cross it at once, `bandwidth` is each one's share: the link serves them
// one after another, first come first served.
struct LinkCost {
  double latencyUs;
  double bandwidth;
  double sharers = 1;
  // A ring whose steps cross links of different speeds: the rate at which a piece crosses its
  // average step (bandwidth stays the slowest step's, which bounds a rank's own slice). 0: the
  // same as bandwidth.
  double stepBandwidth = 0;
};

LinkCost intraLink(const LinkModel& m);  // within an instance
LinkCost interLink(const LinkModel& m);  // across instances, per rank
LinkCost chipLink(const LinkModel& m);   // between the cores of one chip, the chip's in all
LinkCost dmaLink(const LinkModel& m);    // one rank's DMA queue to the cores of its chip
// The fabric's path between instances of one description (intraLink when there is none).
LinkCost crossLink(const LinkModel& m);
// The slowest link an algorithm that ignores the instance boundary crosses (on one chip: a
// rank's DMA queue, dmaLink).
LinkCost flatLink(const LinkModel& m);
// `link` as a ring over whole chips steps on it: from core to core of a chip (its DMA queue's
// latency) ranksPerChip - 1 times for each time it crosses `link`, so a block's way round
// pays their average latency per step.
LinkCost ringStepLink(const LinkModel& m, LinkCost link);

// A ring over whole chips of instances the fabric joins (a torus's Z links, a switch's higher
// tier), from `link` (the slowest step's bandwidth, which bounds a rank's own slice): of its
// steps `crossShare` cross to the next instance (crossLink), one a chip leaves the chip on
// the instance's fabric (intraLink), the others go core to core (dmaLink). Its latency and a
// piece's rate (stepBandwidth) are their average, as the simulator's chain of hops adds them
// up (gen2: 0.5, 2 and 3 us; ringStepLink took every chip's step as a crossing).
LinkCost fabricRingLink(const LinkModel& m, LinkCost link, double crossShare);

// A flat ring over `instances` joined by the network, an instance's ranks consecutive in it:
// it crosses the network once per copy of the description (one rank alone on its rail's NIC,
// shared by the channels), the copy's fabric (crossLink) between the copy's other instances
// (LinkModel::fabricInstances), and steps along the instance's chips in between (ringStepLink,
// a rank's DMA queue). Its latency and a piece's rate (stepBandwidth) are their average over
// the ring's steps, its bandwidth the slowest's.
LinkCost instancesRingLink(const LinkModel& m, int nranks, int instances, int channels);

// How many copies of the description `instances` instances span (LinkModel::fabricInstances
// a copy; the network joins the copies): ceil(instances / fabricInstances).
int descriptionCopies(const LinkModel& m, int instances);
// The copy of the description instance (or column row) `instance` is on.
inline int descriptionCopyOf(const LinkModel& m, int instance) {
  return instance / std::max(1, m.fabricInstances);
}

// What `messages` sent at once by one rank cost beyond the first on the transport of the
// flat link (TransportCost::perMessageUs each; 0 without transports).
double transportMessagesUs(const LinkModel& m, int messages);

// What a call's `messages`, every rank's together, cost the cores of the busiest host
// (TransportCost::hostMessageUs each, its ranks' share of them; 0 without transports). An
// estimate adds it on top of its own path: over tcp 4 to 8 ranks share the 2-core host, and
// between two algorithms with as many steps in a row the one with fewer messages won
// (docs/ALGORITHMS.md, "The transport under the links").
double hostMessagesUs(const CollArgs& a, const LinkModel& m, double messages);
// A rank's reduction of `bytes` it has received whole, after the transfer rather than streamed
// with it (rdh's halves, mesh's arrivals): at the transport's TransportCost::reduceGBs where
// the send and receive buffers of the host's ranks outgrow its cache and that is slower than
// the HBM's (reduceUs); reduceUs otherwise.
double hostReduceUs(const CollArgs& a, const LinkModel& m, double bytes);

// The link to a partner at a growing distance within one instance (halving/doubling, trees,
// Bruck): slowed by half a direct transfer's average torus hops (at least one).
LinkCost partnerLink(const LinkModel& m);

// What each rank's message to its partner at distance 2^k costs when every rank sends one at
// once (`levels`: m.xorPartners, m.shiftPartners or m.treePartners): through the sender's DMA queue
// when the partner is on its chip; else along the route's hops, each link carrying as many such
// transfers (the chips in between send the same way), shared by the chip's ranks whose partners
// are off the chip (a torus link, a switch port, a Z link or the higher tier); across instances
// the network's share per rank. The bandwidth is the slowest present, the latency each one's
// weighted by its share of the pairs. partnerLink without levels.
LinkCost levelLink(const LinkModel& m, const std::array<PartnerLevel, kPartnerLevels>& levels,
                   int k);
// The same level's links by where a rank's partner is: on its chip (its DMA queue), on another
// chip of its instance (the route's hops shared as above), or in another instance (the rail's
// share across the network; where the fabric joins the instances, its Z links or higher tier).
// levelLink mixes them by their shares of the pairs; an estimate that follows the pairs one by
// one (bruckPhase) takes each pair's own.
struct LevelClasses {
  LinkCost chip, offChip, offInstance;
};
LevelClasses levelClasses(const LinkModel& m,
                          const std::array<PartnerLevel, kPartnerLevels>& levels, int k);

// What reducing `bytes` into a local operand costs a rank: two reads and a write of HBM each.
double reduceUs(const LinkModel& m, double bytes);
// An all-gather's copy of the rank's own block from sendbuff into place in recvbuff: every
// all-gather algorithm runs it as a step of its own, before or after its transfers (out of
// place; in place it is a no-op, which every candidate shares). 0 for the other collectives.
double ownBlockCopyUs(const CollArgs& a, const LinkModel& m);
// What copying `bytes` within a rank's memory costs it: a read and a write of HBM each, or the
// emulation host's copy (TransportCost::copyGBs) where that is slower.
double copyUs(const LinkModel& m, double bytes);

// A transfer of `bytes` on `link` that its receiver reduces as it streams in, while every
// sharer of the link sends one as large: the last one served waits for the others' transfers,
// then takes the slower of its own transfer and its reduction (at least the link's share).
double sharedReduceUs(const LinkModel& m, const LinkCost& link, double bytes);

// What a forwarding step (recvReduceSend, recvCopySend) streams at a time: it forwards a piece
// once it has it (the executor's chunk; trnccl-sim's --piece).
inline constexpr double kForwardPieceBytes = 64 * 1024;

// Bytes of the whole buffer S, as nccl-tests counts it (the per-rank count times nranks for
// all-gather, reduce-scatter, all-to-all, gather and scatter).
double totalBytes(const CollArgs& a);

// One ring phase (a reduce-scatter or an all-gather) over k members: (k-1) steps of bytes / k.
double ringPhase(int k, double bytes, LinkCost link);
// A reduce-scatter's ring phase: each step also reduces its bytes, streaming with the transfer,
// so a step takes the slower of the two (the reduction where HBM is slower than the link).
double ringReducePhase(int k, double bytes, LinkCost link, const LinkModel& m);

// One ring phase over k members on `channels` rings at once, each on its own part (bytes /
// channels) and its own directed links, each extra concurrent message costing a little per step.
// With `reduce`, the steps reduce as ringReducePhase's.
double channelsRingPhase(int k, double bytes, LinkCost link, int channels,
                         const LinkModel* reduce = nullptr);

// A pipelined ring phase over k members on `link` (its latency the ring's average step's),
// each step of bytes / k in slices of args.sliceBytes, every slice a message forwarded piece
// by piece (kForwardPieceBytes) as it arrives: (k - 1) x slices steps, each as long as the
// slower of the rank's own message and transfer (and reduction, with `reduce`) of the slice
// (link.bandwidth: the slowest step's, since the slowest rank's queue bounds the pass) and its
// predecessor's message, latency and first piece (at the average step's rate). So latency is paid
// per slice only where the link is faster than it, and hidden where the bytes take longer. The
// transport's latency (TransportCost) is paid once per step: the executor hands a step's slices to
// the connection back to back, so only the first waits for the receiver to notice.
double pipelinedRingPhase(const CollArgs& a, const LinkModel& m, int k, double bytes, LinkCost link,
                          bool reduce);

// A ring of two members forwards nothing: a slice's send and its receive are steps of their
// own, so the next slice leaves once this one is in (the schedule's order, not a pipeline).
// What one slice costs: its message and transfer, then the peer's landing a latency later
// (kCopy); received and reduced as it streams in (kReduce); and in the fused all-reduce, the
// final slice forwarded as it is reduced and the peer's landing (kAllReduce).
enum class PairSlice { kCopy, kReduce, kAllReduce };
double pairSliceUs(const LinkModel& m, double slice, LinkCost link, PairSlice kind);

// The fused ring all-reduce (ringAllReduceSteps) over k members: a pipelined reduce-scatter
// phase and all-gather phase; between two members, slice by slice (pairSliceUs).
double pipelinedRingAllReduce(const CollArgs& a, const LinkModel& m, int k, double bytes,
                              LinkCost link);

// One phase of n-1 steps of S/n over the flat link, all ranks in a ring: the model's figure for
// the chains and the pairwise exchange.
double flatPhase(const CollArgs& a, const LinkModel& m);

// One round of direct transfers among all a.nranks ranks, each sending `bytesPerPeer` to every
// other rank at once. On a torus the transfers share links: each is slowed and delayed by the
// average hops of a direct transfer. On a switch a chip's port carries what its ranks send off
// the chip (and the higher tier what they send to other servers), so the round takes the
// busiest port's bytes over its bandwidth.
double directRound(const CollArgs& a, const LinkModel& m, double bytesPerPeer);

// Who sends in a direct round of a call with fewer elements than ranks, whose blocks past the
// first `owners` are empty (a schedule drops empty steps): every rank to the owners only (a
// reduce-scatter round), or the owners to every rank (an all-gather round). A rank issues only
// its non-empty messages, and only the owners' rails carry the second kind.
enum class OwnersRound { kToOwners, kFromOwners };
double directOwnersRound(const CollArgs& a, const LinkModel& m, double bytesPerPeer, int owners,
                         OwnersRound kind);

// directRound with a block of the whole buffer (S / nranks) for every peer: mesh, gather,
// scatter and the ordered reduce-scatter rounds.
double directBlockRound(const CollArgs& a, const LinkModel& m);

// One rank's peers in a round of direct transfers on a switch, by where they are (offServer
// among offChip), and how many ranks of its chip send such a round at once.
struct DirectPeers {
  int onChip = 0;
  int offChip = 0;
  int offServer = 0;
  int chipRanks = 1;
};
// One round of direct transfers on a switch in which `chipRanks` ranks of every chip send
// `bytesPerPeer` to each of their peers at once: the busiest of the chip's DMA, its port and
// the higher tier.
double switchRound(const LinkModel& m, DirectPeers peers, double bytesPerPeer);

// One phase of the flat ring over all ranks on args.channels rings at once, each on its own part
// (S / channels) and its own directed links (channelRings guarantees no two share one; links
// are full duplex and the description's bandwidth is per direction), each extra concurrent
// message costing a little per step. Across instances the EFA share per rank is the
// bottleneck, which more rings don't widen.
// A reduce-scatter's phase reduces (ringReducePhase), an all-gather's does not.
double flatRingPhase(const CollArgs& a, const LinkModel& m);
// The ring all-reduce: a reduce-scatter phase and an all-gather phase.
double flatRingAllReduce(const CollArgs& a, const LinkModel& m);

// What the messages a rank issues at once beyond the first cost (a DMA descriptor and a
// semaphore each; on EFA each goes through the rail's send queue): m.messageUs apiece.
double extraMessagesUs(const LinkModel& m, int messages);

// One level of a tree (root-most first): the link its transfers cross, and how many children
// its busiest parent receives from.
struct TreeLevel {
  LinkCost link;
  int fanIn = 2;
};

// A double binary tree all-reduce of `bytes` (allreduce/tree.cc): two trees, each over half,
// in chunks of at most chunkBytes. A chunk climbs tree 0 with every rank sending at once (a
// message, the latency, a child's chunk and the other's reduction a level), then, the two
// trees' rounds running on every rank one after the other, the later of tree 1's climb and
// tree 0's way down to tree 1's root, then tree 1's way down (each level a piece, and the
// second child's chunk after the first's, on links the chunk has to itself). The chunks do not
// pipeline: each further one costs that again, or the busiest level's round where longer (a
// rank's round's steps one after another, waiting for its parent's previous round).
double treeAllReduceTime(double bytes, double chunkBytes, const std::vector<TreeLevel>& levels,
                         const LinkModel& m);

// Bruck's all-gather or reduce-scatter (bruck.cc): ceil(log2 n) steps, step j moving
// min(2^j, n - 2^j) blocks of S/n to a partner 2^j ranks away, as two messages in two groups
// where the blocks wrap; reduce-scatter copies its buffer to scratch first and reduces the
// blocks, where that is slower than their transfer. Followed rank by rank: each pair on its own
// link (levelClasses of m.shiftPartners: every rank sends at once), each group waiting for the
// partner's earlier ones; a chip's link off the chip serves its ranks' messages in the order
// they ask for it (its link between instances or its switch port across levels too). With
// transports, the level-by-level form they were measured against.
double bruckPhase(const CollArgs& a, const LinkModel& m);

}  // namespace trnccl::algorithms
