// Ordered all-reduce, reduce-scatter and reduce: bitwise-reproducible reductions for
// deterministic mode (TRNCCL_DETERMINISTIC=1; docs/COLLECTIVES.md), of any size.
//
// Composition: a direct reduce-scatter in slices in which every block's owner folds the n
// contributions in rank order, op(...op(op(x0, x1), x2)..., x[n-1]) (orderedReduceScatter,
// ordered_steps.cc), then
//   all-reduce:     a ring all-gather of the final blocks (ring_steps.cc) over the first ring
//                   of the shape (physical links) or the natural order;
//   reduce-scatter: nothing more;
//   reduce:         every owner sends its final block to the root (a direct gather).
// Each element is reduced once, in the same association on every rank, whatever the channel
// count, slice size, transport or topology; everything after the fold only copies. So the bits
// equal those of every other algorithm that folds in rank order (Algorithm::foldsInRankOrder).
// Steps per reduce-scatter slice: one round of 2(n-1) concurrent transfers (this rank's slice
// of every other block out, every peer's slice of this block in, to scratch), then n-1 local
// folds; the all-gather n-1 per pipeline slice. Rounds end in a wait for every peer, so they
// are larger than the pipeline slice (roundElems). Bytes sent per rank: (n-1)/n * S
// (reduce-scatter) + (n-1)/n * S (all-gather), as the ring: bandwidth-optimal; the price is
// one more copy of the arrivals (transport to scratch). Reduce: the root receives
// (n-1)/n * S twice (a chain: S once).
// In place: orderedReduceScatter saves the own block first; the all-gather and the gather
// write blocks this rank sent earlier, after their owner folded them (so after it received
// them).
#include "algorithms/ordered.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "algorithms/cost.h"
#include "algorithms/ordered_steps.h"
#include "algorithms/patterns.h"
#include "algorithms/ring_steps.h"

namespace trnccl::algorithms {

using schedule::Primitive;
using schedule::Step;

namespace {

// Bytes of arrivals a round may hold in scratch, over all peers.
constexpr size_t kRoundScratchBytes = size_t{4} << 20;

// The reduce-scatter's slice: rounds end in a wait for every peer, so fewer and larger rounds
// cost less (4 slices per round: 40% less CPU time than one for 32 MiB on 4 ranks), as long
// as the arrivals' scratch stays small; never below the pipeline slice.
size_t roundElems(const CollArgs& a) {
  const size_t peers = static_cast<size_t>(std::max(1, a.nranks - 1));
  const size_t bytes =
      std::max(a.sliceBytes, std::min(4 * a.sliceBytes, kRoundScratchBytes / peers));
  return std::max<size_t>(1, bytes / device::dataTypeSize(a.type));
}

// The all-gather's and the gather's: the pipeline slice.
size_t sliceElems(const CollArgs& a) {
  return std::max<size_t>(1, a.sliceBytes / device::dataTypeSize(a.type));
}

bool isAvg(const CollArgs& a) { return a.op == device::RedOp::kAvg; }

schedule::Schedule allReduce(const CollArgs& a) {
  schedule::Schedule s = startSchedule(a, kOrderedAllReduce.name);
  const size_t elem = device::dataTypeSize(a.type);
  auto* send = const_cast<std::byte*>(static_cast<const std::byte*>(a.send));
  auto* recv = static_cast<std::byte*>(a.recv);
  auto block = [&](int b) { return evenBlock(a.count, a.nranks, b); };
  auto count = [&](int b) { return block(b).count; };
  orderedReduceScatter(
      s, a, [&](int b) { return send + block(b).offset * elem; },
      recv + block(a.rank).offset * elem, count, roundElems(a), isAvg(a));
  const Ring ring = ringAt(channelRings(a.shape.get(), a.nranks).front(), a.rank);
  ringAllGather(
      s, ring, [&](int pos) { return recv + block(ring.members[pos]).offset * elem; },
      [&](int pos) { return count(ring.members[pos]); }, sliceElems(a));
  return s;
}

schedule::Schedule reduceScatter(const CollArgs& a) {
  schedule::Schedule s = startSchedule(a, kOrderedReduceScatter.name);
  const size_t block = a.count * device::dataTypeSize(a.type);
  auto* send = const_cast<std::byte*>(static_cast<const std::byte*>(a.send));
  orderedReduceScatter(
      s, a, [&](int b) { return send + b * block; }, static_cast<std::byte*>(a.recv),
      [&](int) { return a.count; }, roundElems(a), isAvg(a));
  return s;
}

// Blocks as all-reduce's; non-root owners fold into scratch (recvbuff may be NULL there).
schedule::Schedule reduce(const CollArgs& a) {
  schedule::Schedule s = startSchedule(a, kOrderedReduce.name);
  const size_t elem = device::dataTypeSize(a.type);
  const int n = a.nranks, r = a.rank, root = a.root;
  auto* send = const_cast<std::byte*>(static_cast<const std::byte*>(a.send));
  auto* recv = static_cast<std::byte*>(a.recv);
  auto block = [&](int b) { return evenBlock(a.count, n, b); };
  std::byte* out = r == root ? recv + block(r).offset * elem
                             : s.allocScratch(std::max<size_t>(1, block(r).count * elem));
  orderedReduceScatter(
      s, a, [&](int b) { return send + block(b).offset * elem; }, out,
      [&](int b) { return block(b).count; }, roundElems(a), isAvg(a));
  if (r != root) {
    s.add(Step{.prim = Primitive::kSend, .sendPeer = root, .src = out, .count = block(r).count});
    return s;
  }
  std::vector<Step> gather;
  for (int k = 0; k < n; ++k) {
    if (k == root) continue;
    gather.push_back(Step{.prim = Primitive::kRecv,
                          .recvPeer = k,
                          .dst = recv + block(k).offset * elem,
                          .count = block(k).count});
  }
  s.addGroup(std::move(gather));
  return s;
}

// One direct round per slice of the reduce-scatter, each followed by the owner's n - 1 folds
// of the slice, local reductions one after another; the next round's group begins after them,
// and rank 0 (out of place) first copies its own slice into place, which its peers' rounds
// wait for. So the rounds do not overlap the folds.
double foldPhase(const CollArgs& a, const LinkModel& m) {
  const double round = static_cast<double>(roundElems(a) * device::dataTypeSize(a.type));
  const double block = totalBytes(a) / a.nranks;
  const double rounds = std::max(1.0, std::ceil(block / round));
  if (withTransports(m)) {  // the form the transport terms were measured against
    return directBlockRound(a, m) + (rounds - 1) * directRound(a, m, 0) +
           hostReduceUs(a, m, (a.nranks - 1) * block);
  }
  const double slice = std::min(round, block);
  return rounds *
         (copyUs(m, slice) + directRound(a, m, slice) + reduceUs(m, (a.nranks - 1) * slice));
}

}  // namespace

const Algorithm kOrderedAllReduce = {
    .name = "ordered",
    .description =
        "direct reduce-scatter folded in rank order by each owner, then ring "
        "all-gather (deterministic)",
    .supports = anyCall,
    .estimate =
        [](const CollArgs& a, const LinkModel& m) {
          const double n = a.nranks;  // the ring all-gather's messages, every rank's
          return foldPhase(a, m) + flatPhase(a, m) + hostMessagesUs(a, m, n * (n - 1));
        },
    .usesChannels = false,
    .build = allReduce,
    .foldsInRankOrder = true,
};

const Algorithm kOrderedReduceScatter = {
    .name = "ordered",
    .description = "direct reduce-scatter folded in rank order by each owner (deterministic)",
    .supports = anyCall,
    .estimate = foldPhase,
    .usesChannels = false,
    .build = reduceScatter,
    .foldsInRankOrder = true,
};

const Algorithm kOrderedReduce = {
    .name = "ordered",
    .description =
        "ordered reduce-scatter, then every owner sends its block to the root "
        "(deterministic)",
    .supports = anyCall,
    .estimate = [](const CollArgs& a,
                   const LinkModel& m) { return foldPhase(a, m) + directBlockRound(a, m); },
    .usesChannels = false,
    .build = reduce,
    .foldsInRankOrder = true,
};

}  // namespace trnccl::algorithms
