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
  const double piece = std::min(chunk, kForwardPieceBytes);
  double climb = 0, round = 0, again = 0, descent = 0;
  for (const TreeLevel& l : levels) {
    const double perChunk = chunk / (l.link.bandwidth * 1e3);
    const double received = std::max(perChunk, reduceUs(m, chunk));  // a child's chunk reduced
    // On the way up a parent's children send at once, each on its own link, and the parent
    // forwards as it reduces the last (recvReduceSend): a chunk's climb waits for one child's
    // chunk a level and reduces the others' (trnccl-sim's trace at 2,048 ranks: a network
    // level takes its latency and one chunk, 26 us of trn2-ultraserver's x 16, not two).
    climb += m.messageUs + l.link.latencyUs + received + (l.fanIn - 1) * reduceUs(m, chunk);
    // A rank runs a round's steps one after another: interior in one tree it takes fanIn
    // chunks up (reducing them) and sends fanIn down; a leaf of the other, one each way. And a
    // round waits for its parent's previous one: a round trip on the level's link.
    const double steps = l.fanIn * received + (l.fanIn + 2) * perChunk;
    round = std::max(round, steps + (l.fanIn + 2) * m.messageUs + 2 * l.link.latencyUs);
    // The chunk's later ways, on links it has to itself by then (the level's sharers gone):
    // the other tree's climb (the other children's chunks are in by then) and the way down,
    // each forwarding piece by piece (a level adds its messages, its latency and a piece), the
    // way down also waiting, at each parent, for the first child's chunk to leave before the
    // second's (recvCopySend, then send on the same queue or NIC).
    const double alone = l.link.bandwidth * std::max(1.0, l.link.sharers) * 1e3;
    again += m.messageUs + l.link.latencyUs + std::max(piece / alone, reduceUs(m, piece));
    descent +=
        l.fanIn * m.messageUs + l.link.latencyUs + piece / alone + (l.fanIn - 1) * chunk / alone;
  }
  // Every rank runs its rounds of both trees one after another (up tree 0, up tree 1, down
  // tree 0, down tree 1), so the chunk climbs tree 0 with every rank sending at once; tree 1's
  // root sends it down only once its own tree 0 chunk has come down to it, or tree 1's climb
  // (delayed by its leaves' tree 0 climbs) has ended; then it comes down tree 1. trnccl-sim's
  // traces of one chunk (--algo tree --trace, 512 KiB): trn2-ultraserver 128 ranks, 33 + 22 +
  // 22 us (76); x 8 instances, 93 + 60 + 69 (223); trn1.32xlarge x 8, 214 + 150 + 160 (524).
  // The flat three climbs were 1.1-1.65x these. With transports, three passes of the levels
  // in a row, each a transport message: over tcp a rank's steps run one after another, and the
  // schedule's path is 3 x depth messages long (6 at 4 ranks, where the tree took 1.4x
  // kangaring's time with as many messages and 4 in a row; docs/ALGORITHMS.md).
  if (withTransports(m)) return 3 * climb + (chunks - 1) * round;
  const double single = climb + std::max(again, descent) + descent;
  // Nor do the chunks pipeline much: a rank's rounds run in order, and its round of one tree
  // waits for the chunk's climb of the other below it, so chunk i + 1 leaves a leaf only after
  // chunk i has climbed (and come down) the other tree that far. trnccl-sim: 2 MiB (4 chunks)
  // takes 3.9-4.1x 512 KiB's time, 32 MiB 64x, from 32 to 2,048 ranks; a chunk's period is the
  // busiest level's round where that is longer.
  return single + (chunks - 1) * std::max(round, single);
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
    double t = copy, messages = 0;
    for (int d = 1, k = 0; d < n; d *= 2, ++k) {
      const LinkCost link = levelLink(m, m.shiftPartners, k);
      const int blocks = std::min(d, n - d);
      const double wrapping = static_cast<double>(blocks - 1) / n;  // share sending two
      t += (1 + wrapping) * (m.messageUs + link.latencyUs) + message(link, blocks * block) -
           m.messageUs - link.latencyUs;
      // A level's blocks land whole, not in slices, as rdh's halves: past the host's cache
      // another pass over them (hostReduceUs; over tcp the all-gather took 1.2-1.4x the ring's
      // time at 16 MiB, 4 and 8 ranks, docs/ALGORITHMS.md).
      t += hostReduceUs(a, m, blocks * block) - reduceUs(m, blocks * block);
      messages += n * (1 + wrapping);
    }
    return t + hostMessagesUs(a, m, messages);
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
  // Which copy of the description each rank is on: past one copy the network joins the copies
  // and each copy's fabric its instances (LinkModel::fabricInstances), as the partner levels
  // count them; otherwise the network joins every instance.
  std::vector<int> copyOf(instanceOf);
  if (m.multiInstance) {
    for (int& c : copyOf) c = descriptionCopyOf(m, c);
  }
  // Each rank's EFA NIC (its instance's rail, numbered job-wide) where the ranks span instances
  // joined by the network; -1: unknown (the rail's share stands in).
  std::vector<int> nicOf(static_cast<size_t>(n), -1);
  if (a.shape != nullptr && m.multiInstance && a.shape->rails.size() == static_cast<size_t>(n)) {
    const int rails = 1 + *std::max_element(a.shape->rails.begin(), a.shape->rails.end());
    for (size_t r = 0; r < nicOf.size(); ++r) nicOf[r] = instanceOf[r] * rails + a.shape->rails[r];
  }
  // Every rank's exchange at distance d, rank by rank, as the engine runs it: a rank's group
  // is over once its send is handed on and its receive has landed, and it begins the next
  // once the last is over. A range that wraps past the last block is two messages in two
  // groups, the second leaving once the sender's first group is over, which waits for its own
  // receive: so a wrap adds a latency only on the ranks' paths that meet it, and a later level
  // waits for its partner's (not the slowest rank's) earlier ones. Where a chip's ranks send
  // off the chip, the route's first link serves their messages first come first served, each
  // whole, as the engine does; elsewhere a message has its link's share (the remainders,
  // sent by the wrapping ranks alone, all of it). The messages of all levels ask for their
  // links in one time order (an early rank's next level goes before a late rank's last), as
  // they reach a link shared across levels in the engine.
  struct Level {
    int d, k, len, out, from;
    LinkCost mixed;
    LevelClasses classes;
    double senders, zHops;
  };
  std::vector<Level> levels;
  for (const int d : distances) {
    const int k = std::countr_zero(static_cast<unsigned>(d));
    const PartnerLevel& pl = m.shiftPartners[static_cast<size_t>(std::min(k, kPartnerLevels - 1))];
    // The blocks a rank receives begin at r (reduce-scatter, from r - d) or r + d (all-gather,
    // from r + d); those it sends, at r + d or r, to r + d or r - d. The first run ends at
    // block n - 1.
    // A chip's link off the chip serves its ranks' messages one after another, each taking it
    // for its bytes `hops` times (the chips in between send the same way: the link's
    // bandwidth times the level's off-chip senders); a rank served early goes on early.
    // Charging every rank the link's full share made Bruck's all-gather 1.4x too dear on 256
    // Trn2 ranks (docs/SIMULATOR.md, ninth session). The network's NICs are queues of their
    // own (serve).
    levels.push_back({d, k, std::min(d, n - d), reduce ? d : 0, reduce ? -d : d,
                      levelLink(m, m.shiftPartners, k), levelClasses(m, m.shiftPartners, k),
                      std::max(1.0, std::round(pl.offChip * std::max(1, m.ranksPerChip))),
                      std::max(1.0, pl.crossHops)});
  }
  const int nl = static_cast<int>(levels.size());
  if (nl == 0) return copy;
  // Per level and rank (level * n + rank): when its first message and its wrapped remainder
  // are handed on and land, and when its group at that level is over.
  const size_t cells = static_cast<size_t>(nl) * static_cast<size_t>(n);
  auto cell = [&](int l, int r) {
    return static_cast<size_t>(l) * n + static_cast<size_t>(mod(r, n));
  };
  std::vector<double> firstHanded(cells), firstLanded(cells), restHanded(cells), restLanded(cells),
      endOf(cells);
  std::vector<char> served(cells, 0), restServed(cells, 0), firstPushed(cells, 0),
      restPushed(cells, 0), ended(cells, 0);
  // When each chip's link to the other instances (or its switch port) is free: one link
  // whatever the level, so a level's transfers queue behind the previous level's there. A
  // torus's levels leave the chip on links of their own. Across the network, when each NIC is
  // free sending and receiving: a rail's ranks' transfers cross both one after another, whole,
  // whichever level sent them. The sender's share of its rail alone missed that the receiving
  // NIC can be the busier: an early rank's next level takes it before a late rank's last, which
  // the late rank's own next level waits for (docs/SIMULATOR.md, twelfth session: 0.82 of
  // simulated on 16 trn1n instances at 2 MiB).
  std::vector<double> crossFree(static_cast<size_t>(n), 0.0);  // by chip
  std::vector<double> nicOutFree(
      static_cast<size_t>(1 + *std::max_element(nicOf.begin(), nicOf.end())), 0.0),
      nicInFree(nicOutFree);
  std::vector<double> levelFree(cells, 0.0);
  auto linkOf = [&](const Level& lv, int src, int dst) {
    const size_t s = static_cast<size_t>(mod(src, n)), t = static_cast<size_t>(mod(dst, n));
    if (chipOf[s] < 0 || chipOf[t] < 0) return lv.mixed;
    if (chipOf[s] == chipOf[t]) return lv.classes.chip;
    return copyOf[s] == copyOf[t] && (m.multiInstance || instanceOf[s] == instanceOf[t])
               ? lv.classes.offChip
               : lv.classes.offInstance;
  };
  auto aloneOf = [](LinkCost link) {
    link.bandwidth *= std::max(1.0, link.sharers);
    link.sharers = 1;
    return link;
  };
  auto head = [&](const Level& lv, int firstBlock) {
    return std::min(lv.len, n - mod(firstBlock, n));
  };
  auto rest = [&](const Level& lv, int s) { return (lv.len - head(lv, s + lv.out)) * block; };
  // A message leaves once its sender is ready, and, when it does not fit the connection's
  // buffer (four slices), once its receiver has begun the group that receives it.
  auto large = [&](double bytes) { return bytes > 4.0 * static_cast<double>(a.sliceBytes); };
  auto leaves = [&](double sender, double receiver, double bytes) {
    return large(bytes) ? std::max(sender, receiver) : sender;
  };
  // The messages in the order they ask for their links: (when, level, kind, sender); kind 0 a
  // first message, 1 a remainder, 2 and 3 the same at the receiving NIC.
  using Event = std::tuple<double, int, int, int>;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  // A sender's message (its first, or its wrapped remainder, sent alone where no link is
  // shared) asking for its link at `ask`: when the sender has handed it on and when it lands.
  auto serve = [&](int l, int s, bool second, double ask) {
    const Level& lv = levels[static_cast<size_t>(l)];
    const double bytes = second ? rest(lv, s) : head(lv, s + lv.out) * block;
    const int dst = mod(s - lv.from, n);
    const LinkCost link = second ? aloneOf(linkOf(lv, s, dst)) : linkOf(lv, s, dst);
    double& handed = (second ? restHanded : firstHanded)[cell(l, s)];
    double& landed = (second ? restLanded : firstLanded)[cell(l, s)];
    const int sc = chipOf[static_cast<size_t>(s)], dc = chipOf[static_cast<size_t>(dst)];
    const bool across = instanceOf[static_cast<size_t>(s)] != instanceOf[static_cast<size_t>(dst)];
    const bool network = copyOf[static_cast<size_t>(s)] != copyOf[static_cast<size_t>(dst)];
    if (network && nicOf[static_cast<size_t>(s)] >= 0 && nicOf[static_cast<size_t>(dst)] >= 0) {
      // Across the network the sender's NIC issues the message and its bytes at the rail's
      // rate (not its DMA queue: ask is a message after the sender is ready); the receiving
      // NIC is asked for once the sending one starts it (cut-through: an event, a message
      // later as every ask here, so that the receiving NICs too serve in time order).
      double& out = nicOutFree[static_cast<size_t>(nicOf[static_cast<size_t>(s)])];
      const double outStart = std::max(out, ask - m.messageUs);
      out = outStart + m.messageUs + bytes / (m.railBandwidth * 1e3);
      handed = out;
      events.push({outStart + m.messageUs, l, second ? 3 : 2, s});
      return false;
    }
    if (sc < 0 || dc < 0 || sc == dc || lv.k >= m.partnerLevels || (network && m.multiInstance)) {
      handed = ask + bytes / (link.bandwidth * 1e3);
      landed = ask - m.messageUs + message(link, bytes);
      return true;
    }
    double& free =
        across || m.switched ? crossFree[static_cast<size_t>(sc)] : levelFree[cell(l, sc)];
    const double start = std::max(free, ask);
    // The fabric's links between instances: as many as the route takes (the level's
    // crossHops), each carrying the transfers of the chips in between the same way round
    // (a route of 2 Z hops: two chips' transfers on every Z link; one on two instances);
    // elsewhere each of the route's hops carries one per chip on the way.
    const bool joined = across && m.crossBandwidth > 0;
    const double share = linkOf(lv, s, dst).bandwidth;  // the link's, however many send
    free = start + bytes / ((joined ? m.crossBandwidth / lv.zHops : share * lv.senders) * 1e3);
    handed = free;
    landed = std::max(free, start + (reduce ? reduceUs(m, bytes) : 0.0)) + link.latencyUs;
    return true;
  };
  // A transfer across the network at the receiving NIC, asked for at `ask` (when the sending
  // NIC started it): that NIC serves its transfers one after another, whole, whichever level
  // sent them, none ending before the sender's; the network's latency after.
  auto land = [&](int l, int s, bool second, double ask) {
    const Level& lv = levels[static_cast<size_t>(l)];
    const double bytes = second ? rest(lv, s) : head(lv, s + lv.out) * block;
    const int dst = mod(s - lv.from, n);
    double& in = nicInFree[static_cast<size_t>(nicOf[static_cast<size_t>(dst)])];
    const double start = std::max(in, ask);
    in = std::max(start + bytes / (m.railBandwidth * 1e3),
                  (second ? restHanded : firstHanded)[cell(l, s)]);
    (second ? restLanded : firstLanded)[cell(l, s)] =
        std::max(in, start + (reduce ? reduceUs(m, bytes) : 0.0)) + m.interLatencyUs;
  };
  auto begun = [&](int l, int r) { return l == 0 || ended[cell(l - 1, r)] != 0; };
  auto beginOf = [&](int l, int r) { return l == 0 ? copy : endOf[cell(l - 1, r)]; };
  auto pushFirst = [&](int l, int s) {  // once the sender (and a large one's receiver) began
    if (l >= nl || firstPushed[cell(l, s)]) return;
    const Level& lv = levels[static_cast<size_t>(l)];
    const int dst = mod(s - lv.from, n);
    const double bytes = head(lv, s + lv.out) * block;
    if (!begun(l, s) || (large(bytes) && !begun(l, dst))) return;
    firstPushed[cell(l, s)] = 1;
    events.push({leaves(beginOf(l, s), large(bytes) ? beginOf(l, dst) : 0.0, bytes) + m.messageUs,
                 l, 0, mod(s, n)});
  };
  auto firstOf = [&](int l, int r) {
    return std::max(firstHanded[cell(l, r)],
                    firstLanded[cell(l, r + levels[static_cast<size_t>(l)].from)]);
  };
  auto ready = [&](int l, int r) {  // rank r's first group at level l is over
    return served[cell(l, r)] && served[cell(l, r + levels[static_cast<size_t>(l)].from)];
  };
  auto pushRest = [&](int l, int x) {  // a remainder, once its sender's first group is over
    const Level& lv = levels[static_cast<size_t>(l)];
    const int dst = mod(x - lv.from, n);
    const double bytes = rest(lv, x);
    if (bytes <= 0 || restPushed[cell(l, x)] || !ready(l, x)) return;
    if (large(bytes) && !ready(l, dst)) return;
    restPushed[cell(l, x)] = 1;
    events.push({leaves(firstOf(l, x), large(bytes) ? firstOf(l, dst) : 0.0, bytes) + m.messageUs,
                 l, 1, mod(x, n)});
  };
  auto tryEnd = [&](int l, int r) {  // rank r's level l over: its next level may begin
    const Level& lv = levels[static_cast<size_t>(l)];
    if (ended[cell(l, r)] || !ready(l, r)) return;
    if (rest(lv, r) > 0 && !restServed[cell(l, r)]) return;
    if (rest(lv, r + lv.from) > 0 && !restServed[cell(l, r + lv.from)]) return;
    double t = firstOf(l, r);
    if (rest(lv, r) > 0) t = std::max(t, restHanded[cell(l, r)]);
    if (rest(lv, r + lv.from) > 0) t = std::max(t, restLanded[cell(l, r + lv.from)]);
    endOf[cell(l, r)] = t;
    ended[cell(l, r)] = 1;
    if (l + 1 < nl) {
      pushFirst(l + 1, r);
      pushFirst(l + 1, r + levels[static_cast<size_t>(l + 1)].from);
    }
  };
  for (int s = 0; s < n; ++s) pushFirst(0, s);
  while (!events.empty()) {
    const auto [ask, l, kind, s] = events.top();
    events.pop();
    const bool second = (kind & 1) != 0;
    if (kind >= 2) {
      land(l, s, second, ask - m.messageUs);
    } else if (!serve(l, s, second, ask)) {
      continue;  // it lands once the receiving NIC has taken it
    }
    const int from = levels[static_cast<size_t>(l)].from;
    if (second) {
      restServed[cell(l, s)] = 1;
    } else {
      served[cell(l, s)] = 1;
      for (const int c : {s, s - from, s + from}) pushRest(l, c);
    }
    tryEnd(l, s);
    tryEnd(l, s - from);
  }
  double last = copy;
  for (int r = 0; r < n; ++r) last = std::max(last, endOf[cell(nl - 1, r)]);
  return last;
}

}  // namespace trnccl::algorithms
