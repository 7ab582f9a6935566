// Pipelined chain reduce: root+1 -> root+2 -> ... -> root, slice by slice.
//
// Composition per slice: the first rank sends its slice; each middle rank recvReduceSends
// (partial sum in scratch); the root recvReduceCopies into recvbuff (divided by n for avg).
// Steps: 1 transfer per rank per slice; every link carries S once. Middle ranks alternate two
// scratch slices and finish a step only once the next rank has read it (syncSend), so a slice
// is never overwritten while in flight; the chain has no cycle, so that wait cannot deadlock.
// recvbuff is only touched on the root (it may be NULL elsewhere, as in NCCL). In place
// (sendbuff == recvbuff on the root) works unchanged.
#include "algorithms/reduce/chain.h"

#include <algorithm>

#include "algorithms/cost.h"
#include "algorithms/patterns.h"

namespace trnccl::algorithms::reduce {

using schedule::Primitive;
using schedule::Step;

namespace {

schedule::Schedule chain(const CollArgs& a) {
  schedule::Schedule s = startSchedule(a, kChain.name);
  const size_t elem = device::dataTypeSize(a.type);
  const int n = a.nranks, pos = mod(a.rank - a.root - 1, n);  // the root is last
  const int prev = ringPrev(a.rank, n), next = ringNext(a.rank, n);
  const auto* send = static_cast<const std::byte*>(a.send);
  auto* recv = static_cast<std::byte*>(a.recv);
  if (n == 1) {
    s.add(Step{.prim = Primitive::kCopy, .src = a.send, .dst = a.recv, .count = a.count});
    return s;
  }
  const size_t slice = std::max<size_t>(1, std::min(a.count, a.sliceBytes / elem));
  std::byte* scratch = (pos > 0 && pos < n - 1) ? s.allocScratch(2 * slice * elem) : nullptr;
  size_t iter = 0;
  for (size_t base = 0; base < a.count; base += slice, ++iter) {
    const size_t chunk = std::min(slice, a.count - base), off = base * elem;
    if (pos == 0) {
      s.add(Step{.prim = Primitive::kSend, .sendPeer = next, .src = send + off, .count = chunk});
    } else if (pos < n - 1) {
      s.add(Step{.prim = Primitive::kRecvReduceSend,
                 .recvPeer = prev,
                 .sendPeer = next,
                 .src = send + off,
                 .dst = scratch + (iter % 2) * slice * elem,
                 .count = chunk,
                 .syncSend = true});
    } else {
      s.add(Step{.prim = Primitive::kRecvReduceCopy,
                 .recvPeer = prev,
                 .src = send + off,
                 .dst = recv + off,
                 .count = chunk,
                 .postOp = a.op == device::RedOp::kAvg});
    }
  }
  return s;
}

}  // namespace

const Algorithm kChain = {
    .name = "chain",
    .description = "pipelined chain ending at the root",
    .supports = anyCall,
    .estimate = flatPhase,
    .usesChannels = false,
    .build = chain,
};

}  // namespace trnccl::algorithms::reduce
