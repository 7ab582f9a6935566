// Ring all-reduce = reduce-scatter ring, then all-gather ring (Patarasuk & Yuan; NCCL's ring).
//
// Composition: the buffer is processed in iterations of nranks * slice elements; each iteration
// is split into nranks blocks and runs 2*nranks - 1 primitives that each stream from the
// previous rank to the next:
//   send block r-1;  recvReduceSend blocks r-2 .. r-(n-1);  recvReduceCopySend block r (final,
//   divided by n for avg);  recvCopySend blocks r-1 .. r-(n-2);  recv block r+1.
// Steps: 2(n-1) transfers per iteration. Bytes on the wire per rank: 2(n-1)/n * S, the
// bus-bandwidth optimum. Every rank's result is the block owner's value copied around the
// ring, so all ranks are bitwise identical.
// In place (send == recv) works unchanged: each rank reads a block of the send buffer before
// writing the same block of the receive buffer. Out of place, the receive buffer doubles as
// the scratch space of the partial sums.
#include "algorithms/allreduce/ring.h"

#include <algorithm>

#include "algorithms/patterns.h"

namespace trnccl::algorithms::allreduce {

using schedule::Primitive;
using schedule::Step;

schedule::Schedule ring(const CollArgs& a) {
  schedule::Schedule s;
  s.algorithm = "ring";
  s.type = a.type;
  s.op = a.op;
  s.nranks = a.nranks;
  const size_t elem = device::dataTypeSize(a.type);
  const auto* send = static_cast<const std::byte*>(a.send);
  auto* recv = static_cast<std::byte*>(a.recv);
  const int n = a.nranks, r = a.rank;
  if (n == 1) {
    s.add(Step{.prim = Primitive::kCopy, .src = a.send, .dst = a.recv, .count = a.count});
    return s;
  }
  const int prev = ringPrev(r, n), next = ringNext(r, n);
  const size_t slice = std::max<size_t>(1, a.sliceBytes / elem);
  const size_t perIter = slice * static_cast<size_t>(n);
  for (size_t base = 0; base < a.count; base += perIter) {
    const size_t chunk = std::min(perIter, a.count - base);
    auto block = [&](int b, Primitive prim, bool postOp = false) {
      Block blk = evenBlock(chunk, n, mod(b, n));
      size_t off = (base + blk.offset) * elem;
      return Step{.prim = prim, .recvPeer = schedule::receives(prim) ? prev : -1,
                  .sendPeer = schedule::sends(prim) ? next : -1, .src = send + off,
                  .dst = recv + off, .count = blk.count, .postOp = postOp};
    };
    s.add(block(r - 1, Primitive::kSend));
    for (int j = 2; j < n; ++j) s.add(block(r - j, Primitive::kRecvReduceSend));
    s.add(block(r, Primitive::kRecvReduceCopySend, a.op == device::RedOp::kAvg));
    for (int j = 1; j < n - 1; ++j) s.add(block(r - j, Primitive::kRecvCopySend));
    s.add(block(r + 1, Primitive::kRecv));
  }
  return s;
}

}  // namespace trnccl::algorithms::allreduce
