// The cost model's ring phases as the schedules pipeline them (cost.h): slices forwarded piece
// by piece, two members slice by slice, the fused all-reduce.
#include <algorithm>
#include <cmath>

#include "algorithms/cost.h"

namespace trnccl::algorithms {

LinkCost fabricRingLink(const LinkModel& m, LinkCost link, double crossShare) {
  const double perChip = std::max(1, m.ranksPerChip);
  const double chipShare = std::max(0.0, 1 / perChip - crossShare), coreShare = 1 - 1 / perChip;
  const LinkCost core = dmaLink(m), chip = intraLink(m), cross = crossLink(m);
  link.latencyUs =
      coreShare * core.latencyUs + chipShare * chip.latencyUs + crossShare * cross.latencyUs;
  link.stepBandwidth =
      1 / (coreShare / core.bandwidth + chipShare / chip.bandwidth + crossShare / cross.bandwidth);
  return link;
}

int descriptionCopies(const LinkModel& m, int instances) {
  return instances > 0 ? descriptionCopyOf(m, instances - 1) + 1 : 0;
}

LinkCost instancesRingLink(const LinkModel& m, int nranks, int instances, int channels) {
  LinkCost within = intraLink(m);
  if (m.ranksPerChip > 1) {
    within.bandwidth = std::min(within.bandwidth, dmaLink(m).bandwidth / channels);
  }
  const LinkCost steps = ringStepLink(m, within);
  // The crossing rank's NIC issues each slice as a message of its own before its bytes: the
  // ring's phase charges every slice its message (pipelinedRingPhase), not the rail's rate.
  const double rail = m.railBandwidth / channels;
  const int copies = descriptionCopies(m, instances);
  const int joined = instances - copies, inside = nranks - instances;
  const LinkCost cross = crossLink(m);
  const double fabric = cross.bandwidth / channels;
  LinkCost link = {
      (copies * m.interLatencyUs + joined * cross.latencyUs + inside * steps.latencyUs) / nranks,
      std::min(within.bandwidth, rail)};
  if (joined > 0) link.bandwidth = std::min(link.bandwidth, fabric);
  link.stepBandwidth = nranks / (copies / rail + joined / fabric + inside / within.bandwidth);
  return link;
}

double pairSliceUs(const LinkModel& m, double slice, LinkCost link, PairSlice kind) {
  const double piece = std::min(slice, kForwardPieceBytes);
  const double sent = m.messageUs + slice / (link.bandwidth * 1e3);
  const double arrive = m.messageUs + link.latencyUs, landed = sent + link.latencyUs;
  if (kind == PairSlice::kCopy) return landed;
  // Reduced as it streams in, from when the step begins (the send is over) or the data
  // arrives, whichever is later, and no earlier than a piece after the last byte landed.
  const double reduced =
      std::max(landed + reduceUs(m, piece), std::max(arrive, sent) + reduceUs(m, slice));
  if (kind == PairSlice::kReduce) return reduced;
  // The fused all-reduce forwards the final slice as it reduces it; the peer's lands a piece
  // and a latency after.
  return reduced + piece / (link.bandwidth * 1e3) + link.latencyUs;
}

double pipelinedRingAllReduce(const CollArgs& a, const LinkModel& m, int k, double bytes,
                              LinkCost link) {
  if (k == 2 && !withTransports(m)) {
    const double step = bytes / k;
    const double slice =
        a.sliceBytes > 0 ? std::min(step, static_cast<double>(a.sliceBytes)) : step;
    const double slices = slice > 0 ? std::ceil(step / slice) : 1;
    return slices * pairSliceUs(m, slice, link, PairSlice::kAllReduce);
  }
  return pipelinedRingPhase(a, m, k, bytes, link, true) +
         pipelinedRingPhase(a, m, k, bytes, link, false);
}

double pipelinedRingPhase(const CollArgs& a, const LinkModel& m, int k, double bytes, LinkCost link,
                          bool reduce) {
  if (k <= 1) return 0;
  const double step = bytes / k;
  const double slice = a.sliceBytes > 0 ? std::min(step, static_cast<double>(a.sliceBytes)) : step;
  const double slices = slice > 0 ? std::ceil(step / slice) : 1;
  const double piece = std::min(slice, kForwardPieceBytes);
  auto moveUs = [&](double b) {
    const double us = b / (link.bandwidth * 1e3);
    return reduce ? std::max(us, reduceUs(m, b)) : us;
  };
  if (k == 2 && !withTransports(m)) {
    return slices * pairSliceUs(m, slice, link, reduce ? PairSlice::kReduce : PairSlice::kCopy);
  }
  // The transport's latency (a wake-up, a system call) is paid once per step, by its first
  // slice: the executor hands a step's slices to the connection back to back (a step is over
  // once the transport took its bytes; a connection holds four slices), so the receiver, busy
  // with the previous slice, finds the next one there. The hardware's latency is paid by every
  // slice that waits for its predecessor.
  const TransportCost* t = m.multiInstance ? m.transports.inter : m.transports.intra;
  const double transportUs = t != nullptr ? std::min(t->latencyUs, link.latencyUs) : 0;
  // A slice's step: the rank's own link time, or, when its predecessor is later, the
  // predecessor's message, the latency and the first piece (forwarded as it comes). A
  // reducing step forwards a piece once it has it all and reduced it: the piece's transfer and
  // its reduction one after the other (the executor's and the simulator's rule), not the
  // slower of the two.
  const double stepBandwidth = link.stepBandwidth > 0 ? link.stepBandwidth : link.bandwidth;
  const double pieceUs = withTransports(m)
                             ? moveUs(piece)  // as the transport terms were measured
                             : piece / (stepBandwidth * 1e3) + (reduce ? reduceUs(m, piece) : 0);
  const double hop = m.messageUs + link.latencyUs - transportUs + pieceUs;
  if (withTransports(m)) {
    // Every rank runs such a phase at once (a flat ring, a composition's lines): the host's
    // cores serve all their messages, a slice a step and channel each.
    const double messages =
        static_cast<double>(a.nranks) * std::max(1, a.channels) * (k - 1) * slices;
    return (k - 1) * (transportUs + slices * std::max(moveUs(slice), hop)) +
           hostMessagesUs(a, m, messages);
  }
  // On the hardware a ring runs slice by slice (ringAllGatherSteps: every slice a pass round
  // the ring of its own, the next pass once this rank's is over), so every slice pays the
  // ring's steps: each the longer of the rank's own slice, issued as a message before its
  // bytes (the DMA queue or NIC takes both), and the predecessor's hop. The slices of a step
  // do not share one hop: gen2's hierarchy rows, 2 slices a step, take 61.6 us a ring in the
  // trace, 2 passes of 31 hops (docs/SIMULATOR.md, twelfth session).
  return (k - 1) * slices * std::max(m.messageUs + moveUs(slice), hop);
}

}  // namespace trnccl::algorithms
