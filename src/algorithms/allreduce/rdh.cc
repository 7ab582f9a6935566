// RDH: recursive halving reduce-scatter then recursive doubling all-gather (Rabenseifner),
// which the Neuron runtime uses for medium sizes, viewing the 4x4 torus as a 4-D hypercube.
//
// Composition, with p the largest power of two <= n and e = n - p:
//   fold:    among ranks < 2e, each even rank sends its buffer to the odd rank above it, which
//            reduces it in; the e even ranks then sit out (virtual rank v = r/2 below 2e,
//            r - e above).
//   halving: log2(p) levels; at distance d = p/2 .. 1 a rank keeps the half of its current range
//            on its side of the partner (v ^ d), sends the other half and reduces the partner's
//            copy of its half, concurrently. The last level's result is final (divided for avg).
//   doubling: log2(p) levels at d = 1 .. p/2 exchanging the ranges held, which double.
//   unfold:  each odd rank below 2e sends the result to its even partner.
// Steps: 2 log2(p) (+2 when n is not a power of two). Bytes per rank: 2(p-1)/p * S (+S to fold
// and unfold). Final values are computed once per element and copied, so ranks agree bitwise.
// In place works: halves are read (sent or reduced) before they are overwritten.
#include "algorithms/allreduce/rdh.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

#include "algorithms/cost.h"

namespace trnccl::algorithms::allreduce {

using schedule::Primitive;
using schedule::Step;

namespace {

struct Range {
  size_t lo, hi;
};

// One level's exchange, as one group: elements `give` of `from` go to the partner while `take`
// receives from it.
void exchange(schedule::Schedule& s, int partner, const std::byte* from, Range give, size_t elem,
              Step take) {
  take.recvPeer = partner;
  s.addGroup({Step{.prim = Primitive::kSend,
                   .sendPeer = partner,
                   .src = from + give.lo * elem,
                   .count = give.hi - give.lo},
              take});
}

schedule::Schedule rdh(const CollArgs& a) {
  schedule::Schedule s = startSchedule(a, kRdh.name);
  const int n = a.nranks, r = a.rank;
  const size_t elem = device::dataTypeSize(a.type);
  const auto* send = static_cast<const std::byte*>(a.send);
  auto* recv = static_cast<std::byte*>(a.recv);
  const bool avg = a.op == device::RedOp::kAvg;
  if (n == 1) {
    s.add(Step{.prim = Primitive::kCopy, .src = a.send, .dst = a.recv, .count = a.count});
    return s;
  }
  int p = 1;
  while (p * 2 <= n) p *= 2;
  const int extra = n - p;
  auto realRank = [&](int v) { return v < extra ? 2 * v + 1 : v + extra; };
  // Fold.
  const std::byte* src = send;  // where this rank's current contribution is read from
  if (r < 2 * extra) {
    if (r % 2 == 0) {
      s.add(Step{.prim = Primitive::kSend, .sendPeer = r + 1, .src = send, .count = a.count});
      s.add(Step{.prim = Primitive::kRecv, .recvPeer = r + 1, .dst = recv, .count = a.count});
      return s;
    }
    s.add(Step{.prim = Primitive::kRecvReduceCopy,
               .recvPeer = r - 1,
               .src = send,
               .dst = recv,
               .count = a.count});
    src = recv;
  }
  const int v = r < 2 * extra ? r / 2 : r - extra;
  // Halving.
  std::vector<Range> held;  // range held before each level, for the doubling to retrace
  Range cur{0, a.count};
  for (int d = p / 2; d >= 1; d /= 2) {
    const int partner = realRank(v ^ d);
    const size_t mid = cur.lo + (cur.hi - cur.lo) / 2;
    const bool lower = (v & d) == 0;
    Range keep = lower ? Range{cur.lo, mid} : Range{mid, cur.hi};
    Range give = lower ? Range{mid, cur.hi} : Range{cur.lo, mid};
    exchange(s, partner, src, give, elem,
             Step{.prim = Primitive::kRecvReduceCopy,
                  .src = src + keep.lo * elem,
                  .dst = recv + keep.lo * elem,
                  .count = keep.hi - keep.lo,
                  .postOp = avg && d == 1});
    held.push_back(cur);
    cur = keep;
    src = recv;  // from the second level on, the running sums live in recvbuff
  }
  // Doubling: retrace the levels backwards, exchanging the range held.
  for (int d = 1, level = static_cast<int>(held.size()) - 1; d < p; d *= 2, --level) {
    const int partner = realRank(v ^ d);
    const Range whole = held[level];
    const Range other = cur.lo == whole.lo ? Range{cur.hi, whole.hi} : Range{whole.lo, cur.lo};
    exchange(
        s, partner, recv, cur, elem,
        Step{
            .prim = Primitive::kRecv, .dst = recv + other.lo * elem, .count = other.hi - other.lo});
    cur = whole;
  }
  // Unfold.
  if (r < 2 * extra) {
    s.add(Step{.prim = Primitive::kSend, .sendPeer = r - 1, .src = recv, .count = a.count});
  }
  return s;
}

// Level k exchanges with the partner at distance 2^k (v ^ 2^k): the halving sends S 2^k / p
// and reduces as much, the doubling sends it back; each a message of its own. Every rank
// exchanges at once, so a level pays what its pairs' routes carry (levelLink: the chip's DMA
// queue, torus hops shared with the chips in between and by the chip's ranks, a switch's
// port, the network) and the reduction where it is slower than the transfer.
// Followed per rank of a chip (every chip alike, n a power of two; without transports): where
// all the chip's ranks cross one link to the partner chip, the link serves their transfers
// first come first served (the chips in between send the same way, as copies), so they finish
// one after another and reach the next level staggered, the first ones with the link to
// themselves (their partners on the other chip are served in the same turn); each reduces its
// half as it streams in. An on-chip level waits for the partner rank, so the chip's ranks meet
// again at the slowest. Charging every off-chip level the full share made rdh 1.29x too dear on
// 8 Trn2 chips (docs/SIMULATOR.md, ninth session). The same holds for a chip's link to other
// instances (a Z link, a switch's higher tier) and its rail's NIC across the network, which
// also carry one queue from level to level (tenth session: 1.20x on 256 ranks of the Trn2
// UltraServer, 1.18x on 4 trn2 instances).
double estimate(const CollArgs& a, const LinkModel& m) {
  const int n = a.nranks;
  const double S = totalBytes(a);
  int levels = 0;
  while ((1 << (levels + 1)) <= n) ++levels;
  const int p = 1 << levels;
  const int perChip = std::max(1, m.ranksPerChip);
  const bool perRank = !withTransports(m) && std::has_single_bit(static_cast<unsigned>(perChip)) &&
                       perChip <= p && n == p;
  // When each of the chip's ranks is ready for the next level.
  std::vector<double> ready(static_cast<size_t>(perRank ? perChip : 1), 0.0);
  // When the chip's link to the other instances of the fabric (a Z link, the switch's higher
  // tier) and its switch port are free: one link for every level that takes it, so a level's
  // transfers queue behind the previous level's there. A torus's levels within an instance
  // leave the chip on links of their own (a fresh queue per level).
  double crossFree = 0, portFree = 0;
  auto level = [&](int k, bool halving) {
    const LinkCost link = levelLink(m, m.xorPartners, k);
    const double bytes = S * (1 << k) / p;
    const double transfer = bytes / (link.bandwidth * 1e3);
    // Over a transport the half arrives whole, then the host reduces it: the reduction does
    // not hide behind the transfer (over tcp rdh took 1.25-1.55x the ring's time at 16 MiB,
    // 2 to 8 ranks, docs/ALGORITHMS.md "The transport under the links").
    const double reduce = !halving            ? 0.0
                          : withTransports(m) ? hostReduceUs(a, m, bytes)
                                              : std::max(0.0, reduceUs(m, bytes) - transfer);
    const double whole = m.messageUs + link.latencyUs + transfer + reduce;
    const int d = 1 << k;
    if (!perRank) {
      for (double& t : ready) t += whole;
      return;
    }
    if (d < perChip) {  // the partner is on the chip: wait for it
      std::vector<double> next(ready.size());
      for (size_t i = 0; i < ready.size(); ++i) {
        next[i] = std::max(ready[i], ready[i ^ static_cast<size_t>(d)]) + whole;
      }
      ready = next;
      return;
    }
    const PartnerLevel* l = k < std::min(m.partnerLevels, kPartnerLevels)
                                ? &m.xorPartners[static_cast<size_t>(k)]
                                : nullptr;
    const double copies = link.sharers / perChip;  // transfers of the link per rank of a chip
    // A level with some pairs within an instance and some across has no one link.
    const bool across = l != nullptr && l->offInstance > 0;
    if (l == nullptr || l->offChip < 1 || (across && l->offInstance < 1) || copies < 1 ||
        copies != std::floor(copies)) {
      for (double& t : ready) t += whole;
      return;
    }
    // Across instances joined by the network the chip's link is its rail's NIC (shared with
    // the rail's other chips, as copies), whose send queue issues each message and its bytes
    // one after another, the network's latency after: the DMA queue does not issue it first.
    const bool network = across && m.multiInstance;
    double levelFree = 0;
    double& free = across ? crossFree : (m.switched ? portFree : levelFree);
    // The link's transfers in the order they ask for it (issued a message after the rank is
    // ready), each taking the whole link for its bytes.
    std::vector<std::pair<double, size_t>> asks;
    for (size_t i = 0; i < ready.size(); ++i) {
      for (int c = 0; c < static_cast<int>(copies); ++c)
        asks.push_back({ready[i] + (network ? 0.0 : m.messageUs), i});
    }
    std::sort(asks.begin(), asks.end());
    const double each =
        (network ? m.messageUs : 0.0) + bytes / (link.bandwidth * link.sharers * 1e3);
    const double latency = network ? m.interLatencyUs : link.latencyUs;
    const double reduceAll = halving ? reduceUs(m, bytes) : 0.0;
    std::vector<double> done(ready.size(), 0.0);
    for (const auto& [ask, i] : asks) {
      const double start = std::max(free, ask);
      free = start + each;
      done[i] = std::max({done[i], free, start + reduceAll});  // the reduction streams with it
    }
    for (size_t i = 0; i < ready.size(); ++i) ready[i] = done[i] + latency;
  };
  for (int k = levels - 1; k >= 0; --k) level(k, true);
  for (int k = 0; k < levels; ++k) level(k, false);
  double t = *std::max_element(ready.begin(), ready.end());
  const LinkCost flat = flatLink(m);
  if (p < n) t += 2 * (flat.latencyUs + S / (flat.bandwidth * 1e3));  // fold and unfold
  // Its messages: one per rank a level, and the n - p folded ranks' two.
  return t + hostMessagesUs(a, m, 2.0 * levels * p + 2.0 * (n - p));
}

}  // namespace

const Algorithm kRdh = {
    .name = "rdh",
    .description = "recursive halving then doubling; non-powers of two folded",
    .supports = [](const CollArgs& a) { return a.nranks > 1; },
    .estimate = estimate,
    .usesChannels = false,
    .build = rdh,
};

}  // namespace trnccl::algorithms::allreduce
