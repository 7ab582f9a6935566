// Two-shot all-reduce for the NeuronSwitch: a direct reduce-scatter, then a direct all-gather,
// each split at the chip, streamed in slices so it takes any size (large messages).
//
// Why split at the chip: a chip's ranks share its switch port. Flat, every rank would send
// (n-1)/n * S through it, P times what a ring sends; so the ranks of a chip first exchange
// through the chip's DMA engines and only what other chips need crosses the port.
// Composition (dims_compose.cc with direct phases over Shape::switchDims, the chip and server
// dimensions taken as one): (1) direct reduce-scatter among the P ranks of the chip (S/P each);
// (2) direct reduce-scatter of that block among the ranks with the same core on the other chips;
// (3) direct all-gather among them; (4) direct all-gather inside the chip. mesh is the flat
// form in one round, for small messages on any fabric.
// Steps: 4 rounds per slice pair, 2 of them through the switch. Bytes on the wire per rank:
// 2(P-1)/P * S on the chip and 2(c-1)/(cP) * S through the port (c chips), so a chip's port
// carries about 2S, as a ring's. Each element's final value is computed once and copied, so
// all ranks are bitwise identical. On a switch only. In place works: a block's round is read
// (sent, or reduced first) before it is written, and a rank receives the final round of a block
// only after its owner received this rank's copy of it.
#include "algorithms/allreduce/twoshot.h"

#include "algorithms/dims_compose.h"

namespace trnccl::algorithms::allreduce {
namespace {

// (core, chip): the switch box with the servers' chips as one dimension.
RankDims dims(const CollArgs& a) { return a.shape->switchDims.merged(1); }

bool supports(const CollArgs& a) {
  return a.shape && a.shape->switched && a.nranks > 1 && a.shape->switchDims.dims.size() == 3 &&
         a.shape->switchDims.covers(a.nranks);
}

}  // namespace

const Algorithm kTwoShot = {
    .name = "twoshot",
    .description =
        "direct reduce-scatter then direct all-gather on the switch, a chip's ranks "
        "first among themselves",
    .supports = supports,
    .estimate = [](const CollArgs& a,
                   const LinkModel& m) { return dimsEstimate(a, dims(a), Phase::kDirect, m); },
    .usesChannels = false,
    .build =
        [](const CollArgs& a) { return dimsAllReduce(a, dims(a), Phase::kDirect, kTwoShot.name); },
};

}  // namespace trnccl::algorithms::allreduce
