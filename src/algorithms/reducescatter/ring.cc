// Ring reduce-scatter: the first half of ring all-reduce.
//
// Composition: every block (recvcount elements) is split into C contiguous parts, one per
// channel (C = args.channels, at most the shape's usable rings, channelRings); channel c
// reduces part c of every block around the c-th ring (ranks ordered along physical links, or
// natural order), the k-th steps of all channels together. Per channel and slice (p = this
// rank's position in the channel's ring; the block of the member at position b is "block b"):
//   send block p-1;  recvReduceSend blocks p-2 .. p-(n-1);  recvReduceCopy block p (final,
//   divided by n for avg) into recvbuff.
// (ringReduceScatterSteps in ring_steps.cc.) Steps: n-1 transfers per slice and channel; bytes
// on the wire per rank: (n-1)/n * S (S = n * recvcount). Each element's final value is computed
// once, by its owner. Partial sums that are only forwarded live in schedule scratch, two
// regions per step index and channel, used by alternate slices. One region would not do: the
// next rank reads this rank's step-j region in its step j+1, and the data that lets this rank
// reach step j of the next slice only proves the next rank finished step j. Two slices later,
// it has finished step j+1 too.
// In place (recvbuff == sendbuff + r*recvcount) needs nothing special: block r of the send
// buffer is read by the last step, which writes the same bytes.
#include "algorithms/reducescatter/ring.h"

#include <algorithm>

#include "algorithms/cost.h"
#include "algorithms/patterns.h"
#include "algorithms/ring_steps.h"

namespace trnccl::algorithms::reducescatter {

using schedule::Primitive;
using schedule::Step;

namespace {

schedule::Schedule ring(const CollArgs& a) {
  schedule::Schedule s = startSchedule(a, kRing.name);
  if (a.nranks == 1) {
    s.add(Step{.prim = Primitive::kCopy, .src = a.send, .dst = a.recv, .count = a.count});
    return s;
  }
  const size_t elem = device::dataTypeSize(a.type);
  const size_t blockBytes = a.count * elem;
  auto* send = const_cast<std::byte*>(static_cast<const std::byte*>(a.send));
  auto* recv = static_cast<std::byte*>(a.recv);
  const size_t slice = std::max<size_t>(1, a.sliceBytes / elem);
  ringChannels(s, a, a.count, [&](const Ring& ring, Block part, std::vector<Step>& steps) {
    if (part.count == 0) return;  // no scratch for an empty part
    auto from = [&](int pos) { return send + ring.members[pos] * blockBytes + part.offset * elem; };
    ringReduceScatterSteps(
        s, steps, ring, from, recv + part.offset * elem, [&](int) { return part.count; }, slice,
        a.op == device::RedOp::kAvg);
  });
  return s;
}

}  // namespace

const Algorithm kRing = {
    .name = "ring",
    .description = "ring reduce-scatter, pipelined in slices",
    .supports = anyCall,
    .estimate = flatRingPhase,
    .usesChannels = true,
    .build = ring,
};

}  // namespace trnccl::algorithms::reducescatter
