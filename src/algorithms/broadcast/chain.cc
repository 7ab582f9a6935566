// Pipelined chain broadcast: root -> root+1 -> ... -> root-1, slice by slice.
//
// Composition per slice: the root sends (and copies into its recvbuff out of place); each
// middle rank recvCopySends; the last rank recvs. Steps: 1 transfer per rank per slice; every
// link carries S once, so time ~ S/B + (n-1) * slice/B. In place (sendbuff == recvbuff on the
// root) skips the root's copy.
#include "algorithms/broadcast/chain.h"

#include <algorithm>

#include "algorithms/cost.h"
#include "algorithms/patterns.h"

namespace trnccl::algorithms::broadcast {

using schedule::Primitive;
using schedule::Step;

namespace {

schedule::Schedule chain(const CollArgs& a) {
  schedule::Schedule s = startSchedule(a, kChain.name);
  const size_t elem = device::dataTypeSize(a.type);
  const int n = a.nranks, pos = mod(a.rank - a.root, n);
  const int prev = ringPrev(a.rank, n), next = ringNext(a.rank, n);
  const auto* send = static_cast<const std::byte*>(a.send);
  auto* recv = static_cast<std::byte*>(a.recv);
  if (pos == 0)
    s.add(Step{.prim = Primitive::kCopy, .src = a.send, .dst = a.recv, .count = a.count});
  const size_t slice = std::max<size_t>(1, a.sliceBytes / elem);
  for (size_t base = 0; base < a.count && n > 1; base += slice) {
    const size_t chunk = std::min(slice, a.count - base), off = base * elem;
    if (pos == 0) {
      s.add(Step{.prim = Primitive::kSend, .sendPeer = next, .src = send + off, .count = chunk});
    } else if (pos < n - 1) {
      s.add(Step{.prim = Primitive::kRecvCopySend,
                 .recvPeer = prev,
                 .sendPeer = next,
                 .dst = recv + off,
                 .count = chunk});
    } else {
      s.add(Step{.prim = Primitive::kRecv, .recvPeer = prev, .dst = recv + off, .count = chunk});
    }
  }
  return s;
}

}  // namespace

const Algorithm kChain = {
    .name = "chain",
    .description = "pipelined chain from the root",
    .supports = anyCall,
    .estimate = flatPhase,
    .usesChannels = false,
    .build = chain,
};

}  // namespace trnccl::algorithms::broadcast
