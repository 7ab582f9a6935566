// The cost model's formulas for the algorithms that move data level by level: the double
// binary tree and Bruck's exchanges (cost.h).
#include <algorithm>
#include <cmath>

#include "algorithms/cost.h"

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
  double t = reduce ? copyUs(m, totalBytes(a)) : ownBlockCopyUs(a, m);
  // A message of `bytes` on `link` (its receiver reducing it, in a reduce-scatter).
  auto message = [&](const LinkCost& link, double bytes) {
    return m.messageUs + link.latencyUs +
           (reduce ? sharedReduceUs(m, link, bytes) : bytes / (link.bandwidth * 1e3));
  };
  for (int d = 1, k = 0; d < n; d *= 2, ++k) {
    // Step k: min(2^k, n - 2^k) blocks to the partner 2^k away while every rank does the same
    // (levelLink).
    const LinkCost link = levelLink(m, m.shiftPartners, k);
    const int blocks = std::min(d, n - d);
    if (withTransports(m)) {  // the form the transport terms were measured against
      const double wrapping = static_cast<double>(blocks - 1) / n;  // share sending two
      t += (1 + wrapping) * (m.messageUs + link.latencyUs) + message(link, blocks * block) -
           m.messageUs - link.latencyUs;
      continue;
    }
    t += message(link, blocks * block);
    if (blocks < 2) continue;
    // Where a rank's range wraps past the last block it is two messages in two groups, and the
    // second leaves once the first group is over, which for some rank is a whole range
    // received: the rank whose range wraps after one block takes its partner's whole range,
    // then sends blocks - 1 more. Its latency overlaps the first group's; its bytes cross the
    // link while only the wrapping ranks send, at the rate one transfer has alone.
    LinkCost alone = link;
    alone.latencyUs = 0;
    alone.bandwidth *= std::max(1.0, link.sharers);
    alone.sharers = 1;
    t += message(alone, (blocks - 1) * block);
  }
  return t;
}

}  // namespace trnccl::algorithms
