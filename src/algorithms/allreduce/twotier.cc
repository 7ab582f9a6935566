// Two-tier all-reduce for a NeuronSwitch of servers (Trn3 Gen2: 36 servers of 4 chips): the
// heavy traffic stays inside a server, and only a server's share crosses the switch's higher,
// narrower tier.
//
// Composition (dims_compose.cc with direct phases over Shape::switchDims = (core, chip, server),
// P cores, H chips per server, G servers): direct reduce-scatter among a chip's ranks -> among
// the same-core ranks of the server's chips -> two-shot all-reduce among the same-place ranks
// of the servers -> direct all-gathers back (twoshot.cc explains the split at the chip). The
// cost model orders the dimensions; with the higher tier the narrowest, servers come last.
// Steps: 6 rounds per slice pair, 2 of them across servers. Bytes on the wire per rank:
// 2(P-1)/P * S on the chip, 2(H-1)/(HP) * S through the port inside the server and
// 2(G-1)/(GHP) * S across servers (twoshot sends 2(HG-1)/(HGP) * S through the port, most of it
// across servers). Each element's final value is computed once and copied: bitwise identical.
// Declines off a switch or on one server. In place as twoshot.
#include "algorithms/allreduce/twotier.h"

#include "algorithms/dims_compose.h"

namespace trnccl::algorithms::allreduce {
namespace {

const RankDims& dims(const CollArgs& a) { return a.shape->switchDims; }

bool supports(const CollArgs& a) {
  return a.shape && a.shape->switched && dims(a).dims.size() == 3 && dims(a).dims[2].size > 1 &&
         dims(a).covers(a.nranks) && dims(a).activeDims() >= 2;
}

}  // namespace

const Algorithm kTwoTier = {
    .name = "twotier",
    .description = "direct phases on the chip, inside each server, then twoshot across servers",
    .supports = supports,
    .estimate = [](const CollArgs& a,
                   const LinkModel& m) { return dimsEstimate(a, dims(a), Phase::kDirect, m); },
    .usesChannels = false,
    .build =
        [](const CollArgs& a) { return dimsAllReduce(a, dims(a), Phase::kDirect, kTwoTier.name); },
};

}  // namespace trnccl::algorithms::allreduce
