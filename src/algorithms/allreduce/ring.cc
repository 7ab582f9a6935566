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
// Steps: 2(n-1) transfers per iteration and channel. Bytes on the wire per rank: 2(n-1)/n * S,
// the bus-bandwidth optimum, spread over the channels' links. Every element's result is its
// block owner's value copied around its channel's ring, so all ranks are bitwise identical.
// In place (send == recv) works unchanged: each rank reads a block of the send buffer before
// writing the same block of the receive buffer. Out of place, the receive buffer doubles as
// the scratch space of the partial sums.
#include "algorithms/allreduce/ring.h"

#include <algorithm>

#include "algorithms/patterns.h"
#include "algorithms/ring_steps.h"

namespace trnccl::algorithms::allreduce {

using schedule::Primitive;
using schedule::Step;

namespace {

// One channel's steps over `ring` for elements [offset, offset + count), empty steps kept.
std::vector<Step> channelSteps(const CollArgs& a, const Ring& ring, size_t offset, size_t count) {
  std::vector<Step> steps;
  const size_t elem = device::dataTypeSize(a.type);
  const auto* send = static_cast<const std::byte*>(a.send) + offset * elem;
  auto* recv = static_cast<std::byte*>(a.recv) + offset * elem;
  const int n = ring.size(), p = ring.pos, prev = ring.prev(), next = ring.next();
  const size_t slice = std::max<size_t>(1, a.sliceBytes / elem);
  const size_t perIter = slice * static_cast<size_t>(n);
  for (size_t base = 0; base < count; base += perIter) {
    const size_t chunk = std::min(perIter, count - base);
    auto block = [&](int b, Primitive prim, bool postOp = false) {
      Block blk = evenBlock(chunk, n, mod(b, n));
      size_t off = (base + blk.offset) * elem;
      return Step{.prim = prim,
                  .recvPeer = schedule::receives(prim) ? prev : -1,
                  .sendPeer = schedule::sends(prim) ? next : -1,
                  .src = send + off,
                  .dst = recv + off,
                  .count = blk.count,
                  .postOp = postOp};
    };
    steps.push_back(block(p - 1, Primitive::kSend));
    for (int j = 2; j < n; ++j) steps.push_back(block(p - j, Primitive::kRecvReduceSend));
    steps.push_back(block(p, Primitive::kRecvReduceCopySend, a.op == device::RedOp::kAvg));
    for (int j = 1; j < n - 1; ++j) steps.push_back(block(p - j, Primitive::kRecvCopySend));
    steps.push_back(block(p + 1, Primitive::kRecv));
  }
  return steps;
}

}  // namespace

schedule::Schedule ring(const CollArgs& a) {
  schedule::Schedule s = startSchedule(a, "ring");
  if (a.nranks == 1) {
    s.add(Step{.prim = Primitive::kCopy, .src = a.send, .dst = a.recv, .count = a.count});
    return s;
  }
  auto rings = channelRings(a.shape.get(), a.nranks);
  const int channels = std::clamp(a.channels, 1, static_cast<int>(rings.size()));
  std::vector<std::vector<Step>> perChannel;
  for (int c = 0; c < channels; ++c) {
    Block part = evenBlock(a.count, channels, c);
    perChannel.push_back(channelSteps(a, ringAt(rings[c], a.rank), part.offset, part.count));
  }
  interleaveChannels(s, perChannel);
  return s;
}

}  // namespace trnccl::algorithms::allreduce
