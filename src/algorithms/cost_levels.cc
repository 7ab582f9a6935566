// The cost model's formulas for the algorithms that move data level by level: the double
// binary tree and Bruck's exchanges (cost.h).
#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <queue>
#include <tuple>
#include <vector>

#include "algorithms/cost.h"
#include "algorithms/patterns.h"

namespace trnccl::algorithms {

double treeAllReduceTime(double bytes, double chunkBytes, const std::vector<TreeLevel>& levels,
                         const LinkModel& m) {
  const double half = bytes / 2;
  const double chunk = std::max(1.0, std::min(chunkBytes, half));
  const double chunks = std::max(1.0, std::ceil(half / chunk));
  double climb = 0, round = 0;
  for (const TreeLevel& l : levels) {
    const double perChunk = chunk / (l.link.bandwidth * 1e3);
    const double received = std::max(perChunk, reduceUs(m, chunk));  // a child's chunk reduced
    climb += m.messageUs + l.link.latencyUs + l.fanIn * received;
    // A rank runs a round's steps one after another: interior in one tree it takes fanIn
    // chunks up (reducing them) and sends fanIn down; a leaf of the other, one each way. And a
    // round waits for its parent's previous one: a round trip on the level's link.
    const double steps = l.fanIn * received + (l.fanIn + 2) * perChunk;
    round = std::max(round, steps + (l.fanIn + 2) * m.messageUs + 2 * l.link.latencyUs);
  }
  // Every rank runs its rounds of both trees one after another: a rank interior in one tree
  // climbs it before its step as a leaf of the other, and takes the final chunk down one tree
  // before the other, so a chunk's way up and down both trees meets about three climbs on its
  // path, not two (a single chunk simulated at 1.5-1.6x the two). With transports the form the
  // transport terms were measured against stays.
  const double climbs = withTransports(m) ? 2 : 3;
  return climbs * climb + (chunks - 1) * round;
}

double bruckPhase(const CollArgs& a, const LinkModel& m) {
  const int n = a.nranks;
  const double block = totalBytes(a) / n;
  const bool reduce = reduces(a.coll);
  // Reduce-scatter copies its buffer to scratch first; all-gather its own block into place.
  const double copy = reduce ? copyUs(m, totalBytes(a)) : ownBlockCopyUs(a, m);
  // A message of `bytes` on `link` (its receiver reducing it, in a reduce-scatter).
  auto message = [&](const LinkCost& link, double bytes) {
    return m.messageUs + link.latencyUs +
           (reduce ? sharedReduceUs(m, link, bytes) : bytes / (link.bandwidth * 1e3));
  };
  if (withTransports(m)) {  // the form the transport terms were measured against
    double t = copy;
    for (int d = 1, k = 0; d < n; d *= 2, ++k) {
      const LinkCost link = levelLink(m, m.shiftPartners, k);
      const int blocks = std::min(d, n - d);
      const double wrapping = static_cast<double>(blocks - 1) / n;  // share sending two
      t += (1 + wrapping) * (m.messageUs + link.latencyUs) + message(link, blocks * block) -
           m.messageUs - link.latencyUs;
    }
    return t;
  }
  // The exchanges in the schedule's order: all-gather at distances 1, 2, 4, ...; reduce-scatter
  // the same backwards, from the largest power of two below n.
  std::vector<int> distances;
  for (int d = 1; d < n; d *= 2) distances.push_back(d);
  if (reduce) std::reverse(distances.begin(), distances.end());
  // Where each rank is (its chip, its instance), so that each pair takes its own class of
  // link (levelClasses); without a shape every pair takes the level's mix (levelLink).
  std::vector<int> chipOf(static_cast<size_t>(n), -1), instanceOf(static_cast<size_t>(n), 0);
  if (a.shape != nullptr) {
    auto place = [&](const std::vector<std::vector<int>>& groups, std::vector<int>& of) {
      for (size_t g = 0; g < groups.size(); ++g) {
        for (int r : groups[g]) {
          if (r >= 0 && r < n) of[static_cast<size_t>(r)] = static_cast<int>(g);
        }
      }
    };
    place(a.shape->chips, chipOf);
    place(a.shape->instances.rows, instanceOf);
  }
  // Every rank's exchange at distance d, rank by rank, as the engine runs it: a rank's group
  // is over once its send is handed on and its receive has landed, and it begins the next
  // once the last is over. A range that wraps past the last block is two messages in two
  // groups, the second leaving once the sender's first group is over, which waits for its own
  // receive: so a wrap adds a latency only on the ranks' paths that meet it, and a later level
  // waits for its partner's (not the slowest rank's) earlier ones. Where a chip's ranks send
  // off the chip, the route's first link serves their messages first come first served, each
  // whole, as the engine does; elsewhere a message has its link's share (the remainders,
  // sent by the wrapping ranks alone, all of it).
  std::vector<double> begin(static_cast<size_t>(n), copy);
  std::vector<double> end(static_cast<size_t>(n));
  auto at = [&](std::vector<double>& v, int r) -> double& {
    return v[static_cast<size_t>(mod(r, n))];
  };
  // When each chip's link to the other instances (or its switch port) is free: one link
  // whatever the level, so a level's transfers queue behind the previous level's there. A
  // torus's levels leave the chip on links of their own.
  std::vector<double> crossFree(static_cast<size_t>(n), 0.0), levelFree(crossFree);
  std::vector<double> firstHanded(crossFree), firstLanded(crossFree), restHanded(crossFree),
      restLanded(crossFree);
  for (const int d : distances) {
    const int k = std::countr_zero(static_cast<unsigned>(d));
    const LinkCost mixed = levelLink(m, m.shiftPartners, k);
    const LevelClasses classes = levelClasses(m, m.shiftPartners, k);
    // The link from rank `src` to rank `dst`, and the same without sharers.
    auto linkOf = [&](int src, int dst) {
      const size_t s = static_cast<size_t>(mod(src, n)), t = static_cast<size_t>(mod(dst, n));
      if (chipOf[s] < 0 || chipOf[t] < 0) return mixed;
      if (chipOf[s] == chipOf[t]) return classes.chip;
      return instanceOf[s] == instanceOf[t] ? classes.offChip : classes.offInstance;
    };
    auto aloneOf = [](LinkCost link) {
      link.bandwidth *= std::max(1.0, link.sharers);
      link.sharers = 1;
      return link;
    };
    const int len = std::min(d, n - d);
    // The blocks a rank receives begin at r (reduce-scatter, from r - d) or r + d (all-gather,
    // from r + d); those it sends, at r + d or r, to r + d or r - d. The first run ends at
    // block n - 1.
    const int out = reduce ? d : 0, from = reduce ? -d : d;
    auto head = [&](int firstBlock) { return std::min(len, n - mod(firstBlock, n)); };
    // A message leaves once its sender is ready, and, when it does not fit the connection's
    // buffer (four slices), once its receiver has begun the group that receives it.
    auto leaves = [&](double sender, double receiver, double bytes) {
      return bytes > 4.0 * static_cast<double>(a.sliceBytes) ? std::max(sender, receiver) : sender;
    };
    // A chip's link off the chip serves its ranks' messages one after another, each taking it
    // for its bytes `hops` times (the chips in between send the same way: the link's
    // bandwidth times the level's off-chip senders); a rank served early goes on early.
    // Charging every rank the link's full share made Bruck's all-gather 1.4x too dear on 256
    // Trn2 ranks (docs/SIMULATOR.md, ninth session). The network's rails keep the share (their
    // send queue is in the class's latency).
    const double senders = std::max(
        1.0,
        std::round(m.shiftPartners[static_cast<size_t>(std::min(k, kPartnerLevels - 1))].offChip *
                   std::max(1, m.ranksPerChip)));
    std::fill(levelFree.begin(), levelFree.end(), 0.0);
    auto rest = [&](int s) { return (len - head(s + out)) * block; };
    // A sender's message (its first, or its wrapped remainder, sent alone where no link is
    // shared) asking for its link at `ask`: when the sender has handed it on and when it lands.
    auto serve = [&](int s, bool second, double ask) {
      const double bytes = second ? rest(s) : head(s + out) * block;
      const int dst = mod(s - from, n);
      const LinkCost link = second ? aloneOf(linkOf(s, dst)) : linkOf(s, dst);
      std::vector<double>& handed = second ? restHanded : firstHanded;
      std::vector<double>& landed = second ? restLanded : firstLanded;
      const int sc = chipOf[static_cast<size_t>(s)], dc = chipOf[static_cast<size_t>(dst)];
      const bool across =
          instanceOf[static_cast<size_t>(s)] != instanceOf[static_cast<size_t>(dst)];
      if (sc < 0 || dc < 0 || sc == dc || k >= m.partnerLevels || (across && m.multiInstance)) {
        at(handed, s) = ask + bytes / (link.bandwidth * 1e3);
        at(landed, s) = ask - m.messageUs + message(link, bytes);
        return;
      }
      double& free = across || m.switched ? crossFree[static_cast<size_t>(sc)]
                                          : levelFree[static_cast<size_t>(sc)];
      const double start = std::max(free, ask);
      // The fabric's links between instances: as many as the route takes (the level's
      // crossHops), each carrying the transfers of the chips in between the same way round
      // (a route of 2 Z hops: two chips' transfers on every Z link; one on two instances);
      // elsewhere each of the route's hops carries one per chip on the way.
      const bool joined = across && m.crossBandwidth > 0;
      const double share = linkOf(s, dst).bandwidth;  // the link's, however many send
      const double zHops = std::max(
          1.0, m.shiftPartners[static_cast<size_t>(std::min(k, kPartnerLevels - 1))].crossHops);
      free = start + bytes / ((joined ? m.crossBandwidth / zHops : share * senders) * 1e3);
      at(handed, s) = free;
      at(landed, s) = std::max(free, start + (reduce ? reduceUs(m, bytes) : 0.0)) + link.latencyUs;
    };
    // The messages in the order they ask for their links: the first ones once the senders are
    // ready, a remainder once its sender's first group is over (and, when large, its
    // receiver's).
    using Event = std::tuple<double, int, int>;  // ask, 0 first / 1 remainder, sender
    std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
    std::vector<char> served(static_cast<size_t>(n), 0), pushed(static_cast<size_t>(n), 0);
    for (int s = 0; s < n; ++s) {
      const int dst = mod(s - from, n);
      events.push(
          {leaves(at(begin, s), at(begin, dst), head(s + out) * block) + m.messageUs, 0, s});
    }
    auto firstOf = [&](int r) { return std::max(at(firstHanded, r), at(firstLanded, r + from)); };
    auto ready = [&](int r) {  // rank r's first group is over
      return served[static_cast<size_t>(mod(r, n))] &&
             served[static_cast<size_t>(mod(r + from, n))];
    };
    while (!events.empty()) {
      const auto [ask, second, s] = events.top();
      events.pop();
      serve(s, second == 1, ask);
      if (second == 1) continue;
      served[static_cast<size_t>(s)] = 1;
      for (const int c : {s, s - from, s + from}) {
        const int x = mod(c, n), dst = mod(x - from, n);
        const double bytes = rest(x);
        if (bytes <= 0 || pushed[static_cast<size_t>(x)] || !ready(x)) continue;
        const bool large = bytes > 4.0 * static_cast<double>(a.sliceBytes);
        if (large && !ready(dst)) continue;
        pushed[static_cast<size_t>(x)] = 1;
        events.push({leaves(firstOf(x), large ? firstOf(dst) : 0.0, bytes) + m.messageUs, 1, x});
      }
    }
    for (int r = 0; r < n; ++r) {
      double t = firstOf(r);
      if (rest(r) > 0) t = std::max(t, at(restHanded, r));
      if (rest(r + from) > 0) t = std::max(t, at(restLanded, r + from));
      at(end, r) = t;
    }
    std::swap(begin, end);
  }
  return *std::max_element(begin.begin(), begin.end());
}

}  // namespace trnccl::algorithms
