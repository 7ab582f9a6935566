// KangaRing (the Neuron runtime's name): a ring over one primary rank per chip, for groups of
// whole chips on a torus; the other ranks of a chip reduce into their primary and receive the
// results from it through the DMA engine's write duplication.
//
// Composition, per channel c (C = the shape's chip rings: two edge-disjoint Hamiltonian cycles
// on a whole 4 x 4 torus, else one) on part c of the buffer, m chips of P ranks, primary = the
// chip's rank c mod P:
//   - the primaries run the fused ring all-reduce (ringAllReduceSteps) over the chips of ring c:
//     per iteration of m blocks, send; recvReduceSend...; recvReduceCopySend (final); recvCopySend
//     ...; recv — 2(m-1) ring steps instead of 2(mP-1) over every rank;
//   - one group before the primary uses a block in the reduce-scatter half, the chip's other
//     ranks reduce their copies of it along a chain into the primary's recvbuff (up chain);
//   - every step of the all-gather half that keeps a final block also writes it to the next
//     rank of the chip (Step::sendPeer2, one read and two writes), which passes it along the
//     chip (down chain, the up chain's edges reversed).
// Lockstep: the steps are laid out on logical groups (a chip's chains run inside one group,
// ring messages are received one group after they are sent), with one group per iteration
// left to the up chain, so that no two channels' steps of one group share a directed
// connection: the up chains of the channels run down (P-1 -> 0) and up (2 -> ... -> 0 -> 1),
// the down chains the reverse, and up and down chains never share a group.
// Steps: 2(m-1) + 1 groups per iteration. Bytes on the wire per rank: primaries 2(m-1)/m * S/C
// on the ring links; inside a chip every rank sends S/C per channel up and the chip's
// ranks pass S/C down. The final value of each element is computed once, by one primary, and
// copied: bitwise identical on all ranks. In place works: a block of sendbuff is read (sent or
// reduced) before that block of recvbuff is written, and the result reaching a rank always
// follows its own contribution along the chain.
#include "algorithms/allreduce/kangaring.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "algorithms/cost.h"
#include "algorithms/patterns.h"
#include "algorithms/ring_steps.h"

namespace trnccl::algorithms::allreduce {

using schedule::Primitive;
using schedule::Step;

namespace {

bool supports(const CollArgs& a) {
  if (!a.shape || a.shape->ranksPerChip < 2 || a.shape->chipRings.empty()) return false;
  if (a.shape->instances.numRows() > 1) return false;  // one instance only
  const auto& chips = a.shape->chips;
  if (chips.size() < 2) return false;
  size_t ranks = 0;
  for (const auto& chip : chips) {
    if (static_cast<int>(chip.size()) != a.shape->ranksPerChip) return false;  // whole chips
    ranks += chip.size();
  }
  return ranks == static_cast<size_t>(a.nranks);
}

// The chip's ranks (by core index) along the up chain of channel c, ending at its primary;
// the down chain is the reverse.
std::vector<int> upChain(int P, int c) {
  std::vector<int> cores;
  for (int i = 0; i < P; ++i) cores.push_back(c % 2 == 0 ? P - 1 - i : mod(c + 1 + i, P));
  return cores;  // c even: P-1 ... 0; c odd: c+1 ... c (for c = 1: 2, 3, ..., 0, 1)
}

// One channel of this rank, as steps per logical group.
class Channel {
 public:
  Channel(const CollArgs& a, int c, int channels) : a_(a) {
    const Shape& shape = *a.shape;
    const std::vector<int>& chipRing = shape.chipRings[c];
    const int P = shape.ranksPerChip;
    const int primary = c % P;
    for (size_t x = 0; x < shape.chips.size(); ++x) {
      const auto& chip = shape.chips[x];
      auto it = std::find(chip.begin(), chip.end(), a.rank);
      if (it != chip.end()) {
        chip_ = chip;
        const int index = static_cast<int>(x);
        chipPos_ =
            static_cast<int>(std::find(chipRing.begin(), chipRing.end(), index) - chipRing.begin());
      }
    }
    for (int x : chipRing) primaries_.push_back(shape.chips[x][primary]);
    for (int core : upChain(P, c)) up_.push_back(chip_[core]);
    elem_ = device::dataTypeSize(a.type);
    part_ = evenBlock(a.count, channels, c);
  }

  std::vector<std::vector<Step>> build() {
    const int m = static_cast<int>(primaries_.size());
    std::vector<Step> ring;  // the primaries' fused ring, the same structure on every rank
    const schedule::Schedule typed = startSchedule(a_, "");  // gives the steps' element type
    std::byte* recv = static_cast<std::byte*>(a_.recv) + part_.offset * elem_;
    ringAllReduceSteps(typed, ring, Ring{primaries_, chipPos_}, recv, recv, part_.count,
                       std::max<size_t>(1, a_.sliceBytes / elem_), a_.op == device::RedOp::kAvg);
    const size_t perIter = static_cast<size_t>(2 * m - 1);
    const size_t iterations = ring.size() / perIter;
    groups_.assign(1 + iterations * 2 * m, {});
    for (size_t t = 0; t < iterations; ++t) {
      for (int k = 0; k < 2 * m - 1; ++k) {
        const size_t g = 1 + t * 2 * m + k;  // the ring step's group
        const Step& step = ring[t * perIter + k];
        if (k < m) reduceIntoPrimary(g - 1, step);
        const bool tap = k >= m - 1;
        if (isPrimary()) groups_[g].push_back(tap ? withTap(step) : step);
        if (tap && !isPrimary()) passDown(g, step);
      }
    }
    return std::move(groups_);
  }

 private:
  bool isPrimary() const { return up_.back() == a_.rank; }
  int upPos() const {
    return static_cast<int>(std::find(up_.begin(), up_.end(), a_.rank) - up_.begin());
  }
  const std::byte* sendAt(const void* recvAt) const {
    const auto off = static_cast<const std::byte*>(recvAt) - static_cast<std::byte*>(a_.recv);
    return static_cast<const std::byte*>(a_.send) + off;
  }

  // The block of ring step `step` (its src, in recvbuff), reduced up the chip's chain.
  void reduceIntoPrimary(size_t g, const Step& step) {
    const int u = upPos(), P = static_cast<int>(up_.size());
    auto* at = const_cast<void*>(step.src);
    Step st{.src = sendAt(at), .dst = at, .count = step.count};
    if (u == 0) {
      st.prim = Primitive::kSend;
      st.sendPeer = up_[1];
    } else {
      st.prim = u == P - 1 ? Primitive::kRecvReduceCopy : Primitive::kRecvReduceSend;
      st.recvPeer = up_[u - 1];
      st.sendPeer = u == P - 1 ? -1 : up_[u + 1];
    }
    groups_[g].push_back(st);
  }

  // The primary's all-gather step, also writing its block to the first rank down the chip.
  Step withTap(Step step) const {
    const int down = up_[up_.size() - 2];
    if (step.prim == Primitive::kRecv) {
      step.prim = Primitive::kRecvCopySend;
      step.sendPeer = down;
    } else {
      step.sendPeer2 = down;
    }
    return step;
  }

  // A rank down the chain receives the block the primary keeps in step `step` and passes it on.
  void passDown(size_t g, const Step& step) {
    const int u = upPos();  // the down chain is the up chain reversed
    const bool last = u == 0;
    groups_[g].push_back(Step{.prim = last ? Primitive::kRecv : Primitive::kRecvCopySend,
                              .recvPeer = up_[u + 1],
                              .sendPeer = last ? -1 : up_[u - 1],
                              .dst = step.dst,
                              .count = step.count});
  }

  const CollArgs& a_;
  std::vector<int> chip_, primaries_, up_;
  int chipPos_ = 0;
  size_t elem_ = 1;
  Block part_{0, 0};
  std::vector<std::vector<Step>> groups_;
};

schedule::Schedule kangaRing(const CollArgs& a) {
  schedule::Schedule s = startSchedule(a, kKangaRing.name);
  const int channels = static_cast<int>(std::min<size_t>(2, a.shape->chipRings.size()));
  std::vector<std::vector<std::vector<Step>>> perChannel;
  size_t longest = 0;
  for (int c = 0; c < channels; ++c) {
    perChannel.push_back(Channel(a, c, channels).build());
    longest = std::max(longest, perChannel.back().size());
  }
  for (size_t g = 0; g < longest; ++g) {
    std::vector<Step> group;
    for (const auto& channel : perChannel) {
      if (g < channel.size()) group.insert(group.end(), channel[g].begin(), channel[g].end());
    }
    s.addGroup(std::move(group));
  }
  return s;
}

// How many DMA hops a chip's chains cost per group, where the channels' chains depend on each
// other. A rank begins a group when every step of its previous group is over, so where rank a
// precedes rank b on one channel's chain (d hops) and b precedes a on another's (d' hops), a
// block reaches b d hops after a began its group, and a's next group waits for b's chain to
// reach it d' hops after b began: (d + d') / 2 hops a group. The worst such pair of the chains
// (one chain alone has none: its ranks run ahead, a stage apart; two chains on 8 cores in
// opposite directions, 7 -> 2 and 2 -> 7: 5 hops a group). Longer cycles alternate the same
// chains and do not wait longer.
double chainCycleHops(int P, int channels) {
  std::vector<std::vector<int>> pos;  // per channel, each core's place on its up chain
  for (int c = 0; c < channels; ++c) {
    const std::vector<int> chain = upChain(P, c);
    std::vector<int> at(static_cast<size_t>(P));
    for (int i = 0; i < P; ++i) at[static_cast<size_t>(chain[static_cast<size_t>(i)])] = i;
    pos.push_back(std::move(at));
  }
  double worst = 0;
  for (int c = 0; c < channels; ++c) {
    for (int c2 = c + 1; c2 < channels; ++c2) {
      for (size_t x = 0; x < static_cast<size_t>(P); ++x) {
        for (size_t y = 0; y < static_cast<size_t>(P); ++y) {
          const int d = pos[c][y] - pos[c][x], d2 = pos[c2][x] - pos[c2][y];
          if (d > 0 && d2 > 0) worst = std::max(worst, (d + d2) / 2.0);
        }
      }
    }
  }
  return worst;
}

// The schedule's groups (docs/SIMULATOR.md, eighth session): per iteration of the chips' ring
// (m blocks per channel), m groups with the up chains (the reduce-scatter half) and m with the
// down chains (the all-gather half). A ring step sends a block over a chip link (reduced in
// the reduce-scatter half; in the all-gather half also written down the chip: two messages);
// its receiver forwards a piece once it has it (and reduced it), so the step lasts the slower
// of the rank's own work and its predecessor's message, latency and piece. A chain's rank
// forwards a piece the same way through its DMA queue, so its ranks run ahead of one another
// a stage apart (a block streamed, or reduced), and a group waits for the chains' hops only
// where the channels' chains wait for each other (chainCycleHops; the channels' blocks pass a
// rank at different moments, so a stage is one block). Each iteration fills the up chain
// (its first block's way from the chain's top to the primary) before its first ring step, and
// its last block goes down the chain before the next iteration's chain can leave its top.
// Before: every group paid the chains' P - 1 hops (2x the simulated time on 8 Trn2 chips).
double estimate(const CollArgs& a, const LinkModel& m) {
  const double chips = static_cast<double>(a.shape->chips.size());
  const int P = std::max(1, a.shape->ranksPerChip);
  const int C = static_cast<int>(std::min<size_t>(2, a.shape->chipRings.size()));
  const double part = totalBytes(a) / C;
  const double iterations =
      std::max(1.0, std::ceil(part / (chips * std::max<size_t>(1, a.sliceBytes))));
  const double block = part / (iterations * chips);
  const double piece = std::min(block, kForwardPieceBytes);
  const LinkCost link = intraLink(m), chip = dmaLink(m);
  auto ring = [&](bool reduce) {
    const double transfer = block / (link.bandwidth * 1e3);
    const double work = reduce ? std::max(transfer, reduceUs(m, block)) : transfer;
    const double hop =
        link.latencyUs + piece / (link.bandwidth * 1e3) + (reduce ? reduceUs(m, piece) : 0);
    return (reduce ? 1 : 2) * m.messageUs + std::max(work, hop);
  };
  const double arrive = m.messageUs + chip.latencyUs + piece / (chip.bandwidth * 1e3);
  const double hopUp = arrive + reduceUs(m, piece), hopDown = arrive;
  const double stream = block / (chip.bandwidth * 1e3);
  const double stageUp = std::max(stream, reduceUs(m, block)), stageDown = stream;
  const double cycle = chainCycleHops(P, C);
  auto chain = [&](double hop, double stage) {
    return cycle > 0 ? (cycle - 1) * hop + arrive + stage : m.messageUs + stage;
  };
  const double up = std::max(ring(true), chain(hopUp, stageUp));
  const double down = std::max(ring(false), chain(hopDown, stageDown));
  const double fill = P > 1 ? arrive + (P - 2) * hopUp + stageUp : 0;
  const double drain = (P - 1) * hopDown;
  // The ring's first step only sends (a message and the block); then m - 1 steps reduce and
  // m - 1 pass the final blocks on.
  const double send = m.messageUs + block / (link.bandwidth * 1e3);
  // Its messages an iteration and channel: the primaries' ring steps, and each of the m blocks
  // up every chip's chain and down it again.
  const double messages = C * iterations * (chips * 2 * (chips - 1) + 2 * chips * chips * (P - 1));
  return iterations * (std::max(fill, chain(hopUp, stageUp)) +
                       std::max(send, chain(hopUp, stageUp)) + (chips - 1) * (up + down) + drain) +
         hostMessagesUs(a, m, messages);
}

}  // namespace

const Algorithm kKangaRing = {
    .name = "kangaring",
    .description =
        "ring over one primary rank per chip; the chip's ranks reduce into it and "
        "get results by write duplication",
    .supports = supports,
    .estimate = estimate,
    .usesChannels = false,
    .build = kangaRing,
};

}  // namespace trnccl::algorithms::allreduce
