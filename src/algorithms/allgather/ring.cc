// Ring all-gather (NCCL's ring): each rank's block travels once around the ring.
//
// Composition: copy own block into place (out of place only), then per slice of the block:
//   send block r;  recvCopySend blocks r-1 .. r-(n-2);  recv block r+1.
// Steps: n-1 transfers per slice. Bytes on the wire per rank: (n-1)/n * S (S = n * sendcount),
// the bus-bandwidth optimum. In place (sendbuff == recvbuff + r*sendcount) skips the copy.
#include "algorithms/allgather/ring.h"

#include <algorithm>

#include "algorithms/patterns.h"

namespace trnccl::algorithms::allgather {

using schedule::Primitive;
using schedule::Step;

schedule::Schedule ring(const CollArgs& a) {
  schedule::Schedule s;
  s.algorithm = "ring";
  s.type = a.type;
  s.nranks = a.nranks;
  const size_t elem = device::dataTypeSize(a.type);
  const size_t blockBytes = a.count * elem;
  auto* recv = static_cast<std::byte*>(a.recv);
  const int n = a.nranks, r = a.rank;
  s.add(Step{.prim = Primitive::kCopy, .src = a.send, .dst = recv + r * blockBytes,
             .count = a.count});
  const int prev = ringPrev(r, n), next = ringNext(r, n);
  const size_t slice = std::max<size_t>(1, a.sliceBytes / elem);
  for (size_t base = 0; base < a.count && n > 1; base += slice) {
    const size_t chunk = std::min(slice, a.count - base);
    auto block = [&](int b, Primitive prim) {
      std::byte* at = recv + mod(b, n) * blockBytes + base * elem;
      return Step{.prim = prim, .recvPeer = schedule::receives(prim) ? prev : -1,
                  .sendPeer = schedule::sends(prim) ? next : -1, .src = at, .dst = at,
                  .count = chunk};
    };
    s.add(block(r, Primitive::kSend));
    for (int j = 1; j < n - 1; ++j) s.add(block(r - j, Primitive::kRecvCopySend));
    s.add(block(r + 1, Primitive::kRecv));
  }
  return s;
}

}  // namespace trnccl::algorithms::allgather
