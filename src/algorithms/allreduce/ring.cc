// Ring all-reduce = reduce-scatter ring, then all-gather ring (Patarasuk & Yuan; NCCL's ring).
//
// Composition: the buffer is split into C contiguous parts, one per channel (C = args.channels,
// at most the shape's usable rings, channelRings); channel c runs the ring schedule over the
// c-th ring (ranks ordered along physical links, or natural order) on its part, and the k-th
// steps of all channels run together. Per channel, the part is processed in iterations of
// nranks * slice elements; each iteration is split into nranks blocks (block b belongs to the
// member at ring position b) and runs 2*nranks - 1 primitives that stream from the previous
// member to the next (p = this rank's ring position):
//   send block p-1;  recvReduceSend blocks p-2 .. p-(n-1);  recvReduceCopySend block p (final,
//   divided by n for avg);  recvCopySend blocks p-1 .. p-(n-2);  recv block p+1.
// (ringAllReduceSteps in ring_steps.cc; the grid compositions' column all-reduce is the same.)
// Steps: 2(n-1) transfers per iteration and channel. Bytes on the wire per rank: 2(n-1)/n * S,
// the bus-bandwidth optimum, spread over the channels' links. Every element's result is its
// block owner's value copied around its channel's ring, so all ranks are bitwise identical.
// In place (send == recv) works unchanged: each rank reads a block of the send buffer before
// writing the same block of the receive buffer. Out of place, the receive buffer doubles as
// the scratch space of the partial sums.
#include "algorithms/allreduce/ring.h"

#include <algorithm>

#include "algorithms/cost.h"
#include "algorithms/patterns.h"
#include "algorithms/ring_steps.h"

namespace trnccl::algorithms::allreduce {
namespace {

schedule::Schedule ring(const CollArgs& a) {
  schedule::Schedule s = startSchedule(a, kRing.name);
  const size_t elem = device::dataTypeSize(a.type);
  const auto* send = static_cast<const std::byte*>(a.send);
  auto* recv = static_cast<std::byte*>(a.recv);
  const size_t slice = std::max<size_t>(1, a.sliceBytes / elem);
  ringChannels(s, a, a.count,
               [&](const Ring& ring, Block part, std::vector<schedule::Step>& steps) {
                 const size_t off = part.offset * elem;
                 ringAllReduceSteps(s, steps, ring, send + off, recv + off, part.count, slice,
                                    a.op == device::RedOp::kAvg);
               });
  return s;
}

}  // namespace

const Algorithm kRing = {
    .name = "ring",
    .description = "reduce-scatter then all-gather around the ring, fused and pipelined in slices",
    .supports = anyCall,
    .estimate = flatRingAllReduce,
    .usesChannels = true,
    .build = ring,
};

}  // namespace trnccl::algorithms::allreduce
