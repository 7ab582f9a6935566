// Pairwise-exchange all-to-all: in step k every rank sends block (r+k) to rank r+k and receives
// block (r-k) from rank r-k, both at once.
//
// Composition: copy own block, then n-1 concurrent send/recv pairs. Steps: n-1; bytes on the
// wire per rank: (n-1)/n * S (S = n * count). In place (sendbuff == recvbuff) first copies the
// send buffer to scratch, since blocks are overwritten before they are sent.
#include "algorithms/alltoall/pairwise.h"

#include <cstring>

#include "algorithms/cost.h"
#include "algorithms/patterns.h"

namespace trnccl::algorithms::alltoall {

using schedule::Primitive;
using schedule::Step;

namespace {

schedule::Schedule pairwise(const CollArgs& a) {
  schedule::Schedule s = startSchedule(a, kPairwise.name);
  const size_t elem = device::dataTypeSize(a.type), blockBytes = a.count * elem;
  const int n = a.nranks, r = a.rank;
  const auto* send = static_cast<const std::byte*>(a.send);
  auto* recv = static_cast<std::byte*>(a.recv);
  if (a.send == a.recv && n > 1 && a.count > 0) {
    std::byte* copy = s.allocScratch(n * blockBytes);
    s.add(Step{.prim = Primitive::kCopy, .src = a.send, .dst = copy, .count = n * a.count});
    send = copy;
  }
  s.add(Step{.prim = Primitive::kCopy,
             .src = send + r * blockBytes,
             .dst = recv + r * blockBytes,
             .count = a.count});
  for (int k = 1; k < n && a.count > 0; ++k) {
    const int to = mod(r + k, n), from = mod(r - k, n);
    s.addGroup({Step{.prim = Primitive::kSend,
                     .sendPeer = to,
                     .src = send + to * blockBytes,
                     .count = a.count},
                Step{.prim = Primitive::kRecv,
                     .recvPeer = from,
                     .dst = recv + from * blockBytes,
                     .count = a.count}});
  }
  return s;
}

}  // namespace

const Algorithm kPairwise = {
    .name = "pairwise",
    .description = "n-1 concurrent pairwise exchanges",
    .supports = anyCall,
    .estimate = flatPhase,
    .usesChannels = false,
    .build = pairwise,
};

}  // namespace trnccl::algorithms::alltoall
