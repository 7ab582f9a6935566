// Direct scatter: the root sends block k of its sendbuff to rank k, to all at once.
//
// Composition: the root copies its own block (sendbuff + root*count) to recvbuff (nothing in
// place) and sends the others in one group of n-1 concurrent sends; every other rank one
// receive. Steps: 1; bytes on the wire: (n-1)/n * S out of the root (S = n * count), count into
// every other rank. In place: recvbuff == sendbuff + root*count on the root (NCCL's rule);
// other ranks' sendbuff is not used (may be NULL).
#include "algorithms/scatter/direct.h"

#include <vector>

#include "algorithms/cost.h"

namespace trnccl::algorithms::scatter {

using schedule::Primitive;
using schedule::Step;

namespace {

schedule::Schedule direct(const CollArgs& a) {
  schedule::Schedule s = startSchedule(a, kDirect.name);
  const size_t blockBytes = a.count * device::dataTypeSize(a.type);
  if (a.rank != a.root) {
    s.add(Step{.prim = Primitive::kRecv, .recvPeer = a.root, .dst = a.recv, .count = a.count});
    return s;
  }
  const auto* send = static_cast<const std::byte*>(a.send);
  std::vector<Step> departures;
  for (int k = 0; k < a.nranks; ++k) {
    if (k == a.root) continue;
    departures.push_back(Step{
        .prim = Primitive::kSend, .sendPeer = k, .src = send + k * blockBytes, .count = a.count});
  }
  s.addGroup(std::move(departures));
  s.add(Step{.prim = Primitive::kCopy,
             .src = send + a.root * blockBytes,
             .dst = a.recv,
             .count = a.count});
  return s;
}

}  // namespace

const Algorithm kDirect = {
    .name = "direct",
    .description = "the root sends every rank its block at once",
    .supports = anyCall,
    .estimate = directBlockRound,
    .usesChannels = false,
    .build = direct,
};

}  // namespace trnccl::algorithms::scatter
