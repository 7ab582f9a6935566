// Ring reduce-scatter: the first half of ring all-reduce.
//
// Composition, per slice of the per-rank block:
//   send block r-1;  recvReduceSend blocks r-2 .. r-(n-1);  recvReduceCopy block r (final,
//   divided by n for avg) into recvbuff.
// Steps: n-1 transfers per slice; bytes on the wire per rank: (n-1)/n * S (S = n * recvcount).
// Partial sums that are only forwarded live in schedule scratch, two regions per step index
// used by alternate slices. One region would not do: the next rank reads this rank's step-j
// region in its step j+1, and the data that lets this rank reach step j of the next slice only
// proves the next rank finished step j. Two slices later, it has finished step j+1 too.
// In place (recvbuff == sendbuff + r*recvcount) needs nothing special: block r of the send
// buffer is read by the last step, which writes the same bytes.
#include "algorithms/reducescatter/ring.h"

#include <algorithm>

#include "algorithms/patterns.h"

namespace trnccl::algorithms::reducescatter {

using schedule::Primitive;
using schedule::Step;

schedule::Schedule ring(const CollArgs& a) {
  schedule::Schedule s;
  s.algorithm = "ring";
  s.type = a.type;
  s.op = a.op;
  s.nranks = a.nranks;
  const size_t elem = device::dataTypeSize(a.type);
  const size_t blockBytes = a.count * elem;
  const auto* send = static_cast<const std::byte*>(a.send);
  auto* recv = static_cast<std::byte*>(a.recv);
  const int n = a.nranks, r = a.rank;
  if (n == 1) {
    s.add(Step{.prim = Primitive::kCopy, .src = a.send, .dst = a.recv, .count = a.count});
    return s;
  }
  const int prev = ringPrev(r, n), next = ringNext(r, n);
  const size_t slice = std::max<size_t>(1, std::min(a.count, a.sliceBytes / elem));
  std::byte* scratch = n > 2 ? s.allocScratch(2 * (n - 2) * slice * elem) : nullptr;
  for (size_t base = 0, iter = 0; base < a.count; base += slice, ++iter) {
    const size_t chunk = std::min(slice, a.count - base);
    auto from = [&](int b) { return send + mod(b, n) * blockBytes + base * elem; };
    s.add(Step{.prim = Primitive::kSend, .sendPeer = next, .src = from(r - 1), .count = chunk});
    for (int j = 2; j < n; ++j) {
      s.add(Step{.prim = Primitive::kRecvReduceSend, .recvPeer = prev, .sendPeer = next,
                 .src = from(r - j), .dst = scratch + (2 * (j - 2) + iter % 2) * slice * elem,
                 .count = chunk});
    }
    s.add(Step{.prim = Primitive::kRecvReduceCopy, .recvPeer = prev, .src = from(r),
               .dst = recv + base * elem, .count = chunk,
               .postOp = a.op == device::RedOp::kAvg});
  }
  return s;
}

}  // namespace trnccl::algorithms::reducescatter
