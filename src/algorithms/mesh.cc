// Mesh (direct) collectives, for the all-to-all NeuronSwitch fabric and for small messages:
// every rank exchanges with every peer directly, in O(1) steps.
//
// All-gather: one round, my block to every peer (from sendbuff) and every peer's block from it,
// concurrently; then my block is copied into recvbuff (a no-op in place).
// Reduce-scatter: round (1) of the all-reduce below, on blocks of recvcount.
// All-reduce:
// Composition: (1) send block k to rank k for every k concurrently, and fold the n copies of
// block r (the n-1 that arrive and this rank's), one at a time in rank order, into recvbuff
// block r (divided for avg); (2) send the final block r to every peer, and receive every other
// final block, concurrently. Each element is folded once, op(...op(op(x0, x1), x2)...), by its
// block's owner, then copied: mesh all-reduce and reduce-scatter keep deterministic mode's order
// (Algorithm::foldsInRankOrder), so small deterministic calls take two rounds, not ordered's
// ring all-gather.
// Steps: 2 rounds; bytes per rank: 2(n-1)/n * S, like the ring, with latency 2 hops instead of
// 2(n-1). Supported while one block fits a connection's buffer twice over (each send completes
// without waiting for its receiver), i.e. for small messages. In place works: block r is read
// before it is written (rank 0 folds into it with its first arrival, the rank second in order
// folds the first arrival and it in one step; a later rank's running value waits in scratch
// until then), and other blocks are sent before they are received into.
#include "algorithms/mesh.h"

#include <algorithm>

#include "algorithms/cost.h"
#include "algorithms/direct_steps.h"
#include "algorithms/patterns.h"

namespace trnccl::algorithms {

using schedule::Primitive;
using schedule::Step;

namespace {

bool supports(const CollArgs& a) {
  // Each direct send must fit a connection's buffer, so sends never wait for their receiver.
  const size_t elem = device::dataTypeSize(a.type);
  size_t block = a.coll == Collective::kAllReduce ? evenBlock(a.count, a.nranks, 0).count : a.count;
  return a.nranks > 1 && block * elem <= 2 * a.sliceBytes;
}

schedule::Schedule allReduce(const CollArgs& a) {
  schedule::Schedule s = startSchedule(a, kMeshAllReduce.name);
  const size_t slice = std::max<size_t>(1, a.sliceBytes / device::dataTypeSize(a.type));
  directAllReduce(s, ringAt(everyRank(a.nranks), a.rank), static_cast<const std::byte*>(a.send),
                  static_cast<std::byte*>(a.recv), a.count, slice, a.op == device::RedOp::kAvg);
  return s;
}

// My block leaves from sendbuff (it is only ever sent) and is copied into recvbuff after the
// round, while the peers read it: copied first, the round waited for that copy (issue 14).
schedule::Schedule allGather(const CollArgs& a) {
  schedule::Schedule s = startSchedule(a, kMeshAllGather.name);
  const size_t block = a.count * device::dataTypeSize(a.type);
  auto* recv = static_cast<std::byte*>(a.recv);
  auto* send = static_cast<std::byte*>(const_cast<void*>(a.send));
  directAllGather(
      s, ringAt(everyRank(a.nranks), a.rank),
      [&](int b) { return b == a.rank ? send : recv + b * block; }, [&](int) { return a.count; },
      a.count);
  s.add(Step{
      .prim = Primitive::kCopy, .src = a.send, .dst = recv + a.rank * block, .count = a.count});
  return s;
}

schedule::Schedule reduceScatter(const CollArgs& a) {
  schedule::Schedule s = startSchedule(a, kMeshReduceScatter.name);
  const size_t block = a.count * device::dataTypeSize(a.type);
  auto* send = static_cast<std::byte*>(const_cast<void*>(a.send));
  directReduceScatter(
      s, ringAt(everyRank(a.nranks), a.rank), [&](int b) { return send + b * block; },
      static_cast<std::byte*>(a.recv), [&](int) { return a.count; }, a.count,
      a.op == device::RedOp::kAvg);
  return s;
}

// The reduce-scatter round's arrivals, reduced one after another into this rank's block.
double reductions(const CollArgs& a, const LinkModel& m) {
  return hostReduceUs(a, m, (a.nranks - 1) * totalBytes(a) / a.nranks);
}

// Two direct rounds and the folds. With fewer elements than ranks only the first `count`
// blocks hold any: the first round sends to their owners only, and only they send the second.
double allReduceEstimate(const CollArgs& a, const LinkModel& m) {
  const double fold = reductions(a, m);
  if (a.count >= static_cast<size_t>(a.nranks)) return 2 * directBlockRound(a, m) + fold;
  const int owners = static_cast<int>(a.count);
  const double block = static_cast<double>(device::dataTypeSize(a.type));
  return directOwnersRound(a, m, block, owners, OwnersRound::kToOwners) +
         directOwnersRound(a, m, block, owners, OwnersRound::kFromOwners) + fold;
}

}  // namespace

const Algorithm kMeshAllReduce = {
    .name = "mesh",
    .description = "direct exchange with every peer in two rounds (small messages)",
    .supports = supports,
    .estimate = allReduceEstimate,
    .usesChannels = false,
    .build = allReduce,
    .foldsInRankOrder = true,
};

const Algorithm kMeshAllGather = {
    .name = "mesh",
    .description = "every rank sends its block to every peer directly (small messages)",
    .supports = supports,
    // The arrivals land whole: past the host's cache another pass over them, as Bruck's.
    .estimate =
        [](const CollArgs& a, const LinkModel& m) {
          const double arrivals = (a.nranks - 1) * totalBytes(a) / a.nranks;
          // Nothing without transports: the two terms are the same figure.
          const double landing = hostReduceUs(a, m, arrivals) - reduceUs(m, arrivals);
          return directBlockRound(a, m) + ownBlockCopyUs(a, m) + landing;
        },
    .usesChannels = false,
    .build = allGather,
};

const Algorithm kMeshReduceScatter = {
    .name = "mesh",
    .description = "direct exchange with every peer in one round (small messages)",
    .supports = supports,
    .estimate = [](const CollArgs& a,
                   const LinkModel& m) { return directBlockRound(a, m) + reductions(a, m); },
    .usesChannels = false,
    .build = reduceScatter,
    .foldsInRankOrder = true,
};

}  // namespace trnccl::algorithms
