// One-shot all-reduce for the NeuronSwitch: every rank reads every peer's whole buffer and
// reduces locally, so the call costs one switch traversal (small messages).
//
// Composition: each rank sends its buffer to every peer at once, and folds the n buffers into
// recvbuff in rank order — x0 (op) x1 (op) ... (op) x(n-1), its own as a local reduce at its
// place — so every rank computes exactly the same operations on the same operands and the
// results are bitwise identical without a second round. Divided for avg after the last.
// Steps: 1 round of transfers (then n-1 local reductions of arrivals, in order); between 2 ranks
// one group, the fold done as the peer's operand arrives.
// Bytes on the wire per rank: (n-1) * S (every peer gets the whole buffer), against 2(n-1)/n * S
// for twoshot: it pays in bandwidth for the latency of one traversal. Supported while the
// buffer fits a connection's buffer twice over (each send completes without waiting for its
// receiver), on a switch, or between 2 ranks on any fabric (where (n-1) * S is what a ring
// sends too). In place: the buffer is copied to scratch first, because
// recvbuff is written while the peers may still read what was sent.
#include "algorithms/allreduce/oneshot.h"

#include <cstdint>

#include "algorithms/cost.h"

namespace trnccl::algorithms::allreduce {

using schedule::Primitive;
using schedule::Step;

namespace {

// Between 2 ranks the one round is the only message of the call, on any fabric: the same bytes
// as a ring's or rdh's two steps, half the messages (over tcp at 2 ranks, 8 B: about half the
// CPU time and context switches of rdh). Up to kTwoRankBytes only: from 256 KiB rdh's pipelined
// halves ran faster over tcp (0.85-1.25 against 0.32-0.91 GB/s busbw at 256 KiB-1 MiB, one
// loaded run), which the cost model does not see yet.
constexpr size_t kTwoRankBytes = 64 << 10;

// Within one host over shm every rank reaches every other through a FIFO of its own: a direct
// transfer is one shm message, whatever the modelled torus says. For small all-reduces that one
// round beats the hardware model's picks there (eighteenth session, quiet, alternating rounds of
// `all_reduce_perf -n 1000`: 3 ranks 2.5-6.3 against 4.7-6.6 us at 8 B-2 KiB, 4 ranks 4.0-6.1
// against 4.9-9.2, 8 ranks 11.8-26.7 against 21.3-30.2 from 32 B; docs/ALGORITHMS.md). Up to
// kHostShmBytes and kHostShmRanks, the sizes and counts measured: the n - 1 copies of the
// buffer are a rank's bytes to send, and on this machine's 2 cores every message is CPU work.
constexpr size_t kHostShmBytes = 4 << 10;
constexpr int kHostShmRanks = 8;

bool overHostShm(const CollArgs& a, size_t bytes) {
  const LinkModel* m = a.links;
  return m != nullptr && !m->multiInstance && m->transports.intra == transportCost("shm") &&
         a.nranks <= kHostShmRanks && bytes <= kHostShmBytes;
}

bool supports(const CollArgs& a) {
  const size_t bytes = a.count * device::dataTypeSize(a.type);
  const bool fabric = (a.nranks == 2 && bytes <= kTwoRankBytes) || (a.shape && a.shape->switched) ||
                      overHostShm(a, bytes);
  return fabric && a.nranks > 1 && bytes <= 2 * a.sliceBytes;
}

schedule::Schedule oneShot(const CollArgs& a) {
  schedule::Schedule s = startSchedule(a, kOneShot.name);
  const int n = a.nranks, r = a.rank;
  const size_t bytes = a.count * device::dataTypeSize(a.type);
  const bool avg = a.op == device::RedOp::kAvg;
  auto* recv = static_cast<std::byte*>(a.recv);
  const std::byte* mine = static_cast<const std::byte*>(a.send);
  const auto from = reinterpret_cast<uintptr_t>(mine), to = reinterpret_cast<uintptr_t>(recv);
  const bool overlap = from < to + bytes && to < from + bytes;
  if (overlap && bytes > 0) {
    std::byte* copy = s.allocScratch(bytes);
    s.add(Step{.prim = Primitive::kCopy, .src = mine, .dst = copy, .count = a.count});
    mine = copy;
  }
  if (n == 2) {
    // One group: the send, and the fold of the two operands as the peer's arrive, x0 (op) x1
    // on both ranks (rank 1 takes the incoming operand first). A second group, with a local
    // copy or reduce, cost each rank ~140 instructions per 8-byte call (src/device/README.md,
    // session 11).
    const int peer = 1 - r;
    s.addGroup({Step{.prim = Primitive::kSend, .sendPeer = peer, .src = mine, .count = a.count},
                Step{.prim = Primitive::kRecvReduceCopy,
                     .recvPeer = peer,
                     .src = mine,
                     .dst = recv,
                     .count = a.count,
                     .postOp = avg,
                     .incomingFirst = r == 1}});
    return s;
  }
  // The sends, with the start of the fold: x0 into recvbuff.
  std::vector<Step> round;
  for (int k = 1; k < n; ++k) {
    round.push_back(
        Step{.prim = Primitive::kSend, .sendPeer = (r + k) % n, .src = mine, .count = a.count});
  }
  round.push_back(
      r == 0 ? Step{.prim = Primitive::kCopy, .src = mine, .dst = recv, .count = a.count}
             : Step{.prim = Primitive::kRecv, .recvPeer = 0, .dst = recv, .count = a.count});
  s.addGroup(std::move(round));
  for (int k = 1; k < n; ++k) {
    const bool last = avg && k == n - 1;
    s.add(k == r ? Step{.prim = Primitive::kReduce,
                        .src = mine,
                        .dst = recv,
                        .count = a.count,
                        .postOp = last}
                 : Step{.prim = Primitive::kRecvReduceCopy,
                        .recvPeer = k,
                        .src = recv,
                        .dst = recv,
                        .count = a.count,
                        .postOp = last});
  }
  return s;
}

// One round in which every rank sends the whole buffer to every peer, then the fold: n - 1
// reductions of the whole buffer one after another (the arrivals are in by then).
double estimate(const CollArgs& a, const LinkModel& m) {
  const double S = totalBytes(a);
  if (a.nranks > 2 && !(a.shape && a.shape->switched) && overHostShm(a, static_cast<size_t>(S))) {
    // Over the host's shm every peer is a neighbour: one hop per message, no shared routes.
    LinkModel host = m;
    host.meshHops = host.meshMaxHops = 1;
    host.directUsPerByte = 0;
    return directRound(a, host, S) + (a.nranks - 1) * reduceUs(m, S);
  }
  return directRound(a, m, S) + (a.nranks - 1) * reduceUs(m, S);
}

}  // namespace

const Algorithm kOneShot = {
    .name = "oneshot",
    .description = "every rank sends its buffer to every peer and reduces all in rank order",
    .supports = supports,
    .estimate = estimate,
    .usesChannels = false,
    .build = oneShot,
};

}  // namespace trnccl::algorithms::allreduce
