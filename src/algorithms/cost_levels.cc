// The cost model's formulas for the algorithms that move data level by level: the double
// binary tree and Bruck's exchanges (cost.h).
#include <algorithm>
#include <bit>
#include <cmath>
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
  // waits for its partner's (not the slowest rank's) earlier ones. A level's first messages
  // share the links as every rank sends at once; the wrapped remainders are sent by the
  // wrapping ranks alone.
  std::vector<double> begin(static_cast<size_t>(n), copy), first(static_cast<size_t>(n));
  std::vector<double> end(static_cast<size_t>(n));
  auto at = [&](std::vector<double>& v, int r) -> double& {
    return v[static_cast<size_t>(mod(r, n))];
  };
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
    const int in = reduce ? 0 : d, out = reduce ? d : 0, from = reduce ? -d : d;
    auto head = [&](int firstBlock) { return std::min(len, n - mod(firstBlock, n)); };
    // A message leaves once its sender is ready, and, when it does not fit the connection's
    // buffer (four slices), once its receiver has begun the group that receives it.
    auto leaves = [&](double sender, double receiver, double bytes) {
      return bytes > 4.0 * static_cast<double>(a.sliceBytes) ? std::max(sender, receiver) : sender;
    };
    for (int r = 0; r < n; ++r) {
      const double sendBytes = head(r + out) * block, recvBytes = head(r + in) * block;
      const double sent = leaves(at(begin, r), at(begin, r - from), sendBytes) + m.messageUs +
                          sendBytes / (linkOf(r, r - from).bandwidth * 1e3);
      const double landed = leaves(at(begin, r + from), at(begin, r), recvBytes) +
                            message(linkOf(r + from, r), recvBytes);
      at(first, r) = std::max(sent, landed);
    }
    for (int r = 0; r < n; ++r) {
      double t = at(first, r);
      const double sendRest = (len - head(r + out)) * block,
                   recvRest = (len - head(r + in)) * block;
      if (sendRest > 0) {
        t = leaves(t, at(first, r - from), sendRest) + m.messageUs +
            sendRest / (aloneOf(linkOf(r, r - from)).bandwidth * 1e3);
      }
      if (recvRest > 0) {
        t = std::max(t, leaves(at(first, r + from), at(first, r), recvRest) +
                            message(aloneOf(linkOf(r + from, r)), recvRest));
      }
      at(end, r) = t;
    }
    std::swap(begin, end);
  }
  return *std::max_element(begin.begin(), begin.end());
}

}  // namespace trnccl::algorithms
