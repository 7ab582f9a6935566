// Ring all-gather (NCCL's ring): each rank's block travels once around the ring.
//
// Composition: every block is split into
// C contiguous parts, one per channel (C = args.channels, at most the shape's usable rings,
// channelRings), and channel c moves part c of every block around the c-th ring (ranks ordered
// along physical links, or natural order), the k-th steps of all channels together. Per channel
// and slice (p = this rank's position in the channel's ring, block p = this rank's block):
//   send block p;  recvCopySend blocks p-1 .. p-(n-2);  recv block p+1.
// Steps: n-1 transfers per slice and channel. Bytes on the wire per rank: (n-1)/n * S
// (S = n * sendcount), the bus-bandwidth optimum. My block is sent from sendbuff and copied into
// place last (out of place), so the ring does not wait for that copy to start; in place
// (sendbuff == recvbuff + r*sendcount) the copy is a no-op.
#include "algorithms/allgather/ring.h"

#include <algorithm>

#include "algorithms/cost.h"
#include "algorithms/patterns.h"
#include "algorithms/ring_steps.h"

namespace trnccl::algorithms::allgather {

using schedule::Primitive;
using schedule::Step;

namespace {

schedule::Schedule ring(const CollArgs& a) {
  schedule::Schedule s = startSchedule(a, kRing.name);
  const size_t elem = device::dataTypeSize(a.type);
  const size_t blockBytes = a.count * elem;
  auto* recv = static_cast<std::byte*>(a.recv);
  const Step copy{
      .prim = Primitive::kCopy, .src = a.send, .dst = recv + a.rank * blockBytes, .count = a.count};
  if (a.nranks == 1) {
    s.add(copy);
    return s;
  }
  const size_t slice = std::max<size_t>(1, a.sliceBytes / elem);
  ringChannels(s, a, a.count, [&](const Ring& ring, Block part, std::vector<Step>& steps) {
    // My block leaves from sendbuff (it is only ever sent, never forwarded from recvbuff).
    auto at = [&](int pos) {
      std::byte* base = ring.members[pos] == a.rank
                            ? static_cast<std::byte*>(const_cast<void*>(a.send))
                            : recv + ring.members[pos] * blockBytes;
      return base + part.offset * elem;
    };
    ringAllGatherSteps(
        s, steps, ring, at, [&](int) { return part.count; }, slice);
  });
  s.add(copy);
  return s;
}

}  // namespace

const Algorithm kRing = {
    .name = "ring",
    .description = "each block travels once around the ring, pipelined in slices",
    .supports = anyCall,
    .estimate = [](const CollArgs& a,
                   const LinkModel& m) { return flatRingPhase(a, m) + ownBlockCopyUs(a, m); },
    .usesChannels = true,
    .build = ring,
};

}  // namespace trnccl::algorithms::allgather
