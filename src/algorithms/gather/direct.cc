// Direct gather: every rank sends its block to the root, which receives them all at once.
//
// Composition: the root copies its own block to recvbuff + root*count (nothing in place), then
// one group of n-1 concurrent receives, block k into recvbuff + k*count; every other rank one
// send. Steps: 1; bytes on the wire: count per rank, (n-1)/n * S into the root (S = n * count).
// In place: sendbuff == recvbuff + root*count on the root (NCCL's rule); other ranks' recvbuff
// is not used (may be NULL).
#include "algorithms/gather/direct.h"

#include <vector>

#include "algorithms/cost.h"

namespace trnccl::algorithms::gather {

using schedule::Primitive;
using schedule::Step;

namespace {

schedule::Schedule direct(const CollArgs& a) {
  schedule::Schedule s = startSchedule(a, kDirect.name);
  const size_t blockBytes = a.count * device::dataTypeSize(a.type);
  if (a.rank != a.root) {
    s.add(Step{.prim = Primitive::kSend, .sendPeer = a.root, .src = a.send, .count = a.count});
    return s;
  }
  auto* recv = static_cast<std::byte*>(a.recv);
  s.add(Step{.prim = Primitive::kCopy,
             .src = a.send,
             .dst = recv + a.root * blockBytes,
             .count = a.count});
  std::vector<Step> arrivals;
  for (int k = 0; k < a.nranks; ++k) {
    if (k == a.root) continue;
    arrivals.push_back(Step{
        .prim = Primitive::kRecv, .recvPeer = k, .dst = recv + k * blockBytes, .count = a.count});
  }
  s.addGroup(std::move(arrivals));
  return s;
}

}  // namespace

const Algorithm kDirect = {
    .name = "direct",
    .description = "every rank sends its block to the root at once",
    .supports = anyCall,
    .estimate = directBlockRound,
    .usesChannels = false,
    .build = direct,
};

}  // namespace trnccl::algorithms::gather
