// Composition along the dimensions of a box of ranks (dims_compose.h), with this rank on one line
// per dimension; d1..dk are the dimensions in dimsOrder(), n_i ranks along d_i.
//   all-reduce:     RS along d1 (n1 blocks) -> RS along d2 of this rank's block -> ... -> AR along
//                   dk -> AG along d(k-1) -> ... -> AG along d1. Phase i moves
//                   (n_i - 1)/n_i * S / (n1 ... n(i-1)) per rank along d_i, twice.
//   reduce-scatter: the order-major layout puts the block of the rank at coordinates c at index
//                   c_d1 * (n2 ... nk) + ... + c_dk, so phase i's blocks are contiguous runs.
//   all-gather:     the same layout, phases in reverse.
// In place: the all-reduce follows its phases' rules (each block read before its rank's final
// write); reduce-scatter and all-gather read the user's buffer once, into scratch or its own
// slot, before anything writes recvbuff.
#include "algorithms/dims_compose.h"

#include <algorithm>
#include <cmath>

#include "algorithms/direct_steps.h"
#include "algorithms/patterns.h"
#include "algorithms/ring_steps.h"

namespace trnccl::algorithms {

using schedule::Primitive;
using schedule::Step;

namespace {

// This rank's line and position along each phase's dimension, and the stride (in blocks) of
// each phase in the order-major layout.
struct Phases {
  std::vector<Ring> lines;      // lines[i]: along order[i]
  std::vector<size_t> strides;  // strides[i] = n(i+1) * ... * nk
  std::vector<int> order;
  Phase phase = Phase::kRing;
  size_t slice = 1;  // elements

  size_t layoutIndex(const RankDims& t, int rank) const {
    const std::vector<int> c = t.coords(rank);
    size_t index = 0;
    for (size_t i = 0; i < order.size(); ++i) index += c[order[i]] * strides[i];
    return index;
  }

  void reduceScatter(schedule::Schedule& s, size_t i, const BlockPtr& in, std::byte* out,
                     const BlockCount& count, bool postOp) const {
    if (phase == Phase::kRing) {
      ringReduceScatter(s, lines[i], in, out, count, slice, postOp);
    } else {
      directReduceScatter(s, lines[i], in, out, count, slice, postOp);
    }
  }
  void allGather(schedule::Schedule& s, size_t i, const BlockPtr& buf,
                 const BlockCount& count) const {
    if (phase == Phase::kRing) {
      ringAllGather(s, lines[i], buf, count, slice);
    } else {
      directAllGather(s, lines[i], buf, count, slice);
    }
  }
  void allReduce(schedule::Schedule& s, size_t i, const std::byte* in, std::byte* out, size_t count,
                 bool postOp) const {
    if (phase == Phase::kRing) {
      ringAllReduce(s, lines[i], in, out, count, slice, postOp);
    } else {
      directAllReduce(s, lines[i], in, out, count, slice, postOp);
    }
  }
};

Phases phasesOf(const CollArgs& a, const RankDims& t, Phase phase) {
  Phases p;
  p.phase = phase;
  p.slice = std::max<size_t>(1, a.sliceBytes / device::dataTypeSize(a.type));
  p.order = dimsOrder(t);
  const std::vector<int> mine = t.coords(a.rank);
  p.strides.assign(p.order.size(), 1);
  for (size_t i = p.order.size(); i-- > 1;) {
    p.strides[i - 1] = p.strides[i] * t.dims[p.order[i]].size;
  }
  for (int d : p.order) p.lines.push_back(Ring{t.line(a.rank, d), mine[d]});
  return p;
}

// Copies of every rank's block between rank order (`ranked`) and the order-major layout, one
// group of local copies.
void permute(schedule::Schedule& s, const CollArgs& a, const RankDims& t, const Phases& p,
             std::byte* ranked, std::byte* layout, bool toLayout) {
  const size_t block = a.count * device::dataTypeSize(a.type);
  std::vector<Step> copies;
  for (int q = 0; q < a.nranks; ++q) {
    std::byte* at = layout + p.layoutIndex(t, q) * block;
    std::byte* r = ranked + q * block;
    copies.push_back(Step{.prim = Primitive::kCopy,
                          .src = toLayout ? r : at,
                          .dst = toLayout ? at : r,
                          .count = a.count});
  }
  s.addGroup(std::move(copies));
}

bool layoutIsRankOrder(const CollArgs& a, const RankDims& t, const Phases& p) {
  for (int q = 0; q < a.nranks; ++q) {
    if (p.layoutIndex(t, q) != static_cast<size_t>(q)) return false;
  }
  return true;
}

// The ring phases' bandwidth terms and latencies, phase i on S / (n1 ... n(i-1)) bytes.
double ringPhasesCost(const RankDims& t, const std::vector<int>& order, double bytes) {
  double us = 0;
  for (int d : order) {
    const RankDims::Dim& dim = t.dims[d];
    us += ringPhase(dim.size, bytes, LinkCost{dim.latencyUs, dim.bandwidth});
    bytes /= dim.size;
  }
  return us;
}

// A direct phase as the schedule runs it (direct_steps.cc): rounds of at most two slices per
// block, each issuing its n - 1 messages one after another from the rank's queue; a
// reduce-scatter's arrivals reduced one after another, overlapping the transfers.
double directPhase(const CollArgs& a, const LinkModel& m, const RankDims::Dim& dim, double bytes,
                   bool reduce) {
  const int n = dim.size;
  if (n <= 1) return 0;
  const double block = bytes / n;
  const double slices = 2.0 * static_cast<double>(std::max<size_t>(1, a.sliceBytes));
  const double rounds = std::max(1.0, std::ceil(block / slices));
  const double transfer = (n - 1) * block / (dim.bandwidth * 1e3);
  const double work = reduce ? std::max(transfer, reduceUs(m, (n - 1) * block)) : transfer;
  // Every rank runs such a phase at once: the host serves all their messages (cost.h).
  return rounds * (dim.latencyUs + (n - 1) * m.messageUs) + work +
         hostMessagesUs(a, m, static_cast<double>(a.nranks) * (n - 1) * rounds);
}

}  // namespace

std::vector<int> dimsOrder(const RankDims& t) {
  std::vector<int> order;
  for (int d = 0; d < static_cast<int>(t.dims.size()); ++d) {
    if (t.dims[d].size > 1) order.push_back(d);
  }
  std::vector<int> best = order;
  double bestUs = ringPhasesCost(t, order, 1e9);
  while (std::next_permutation(order.begin(), order.end())) {
    const double us = ringPhasesCost(t, order, 1e9);
    if (us < bestUs) {
      best = order;
      bestUs = us;
    }
  }
  return best;
}

schedule::Schedule dimsAllReduce(const CollArgs& a, const RankDims& t, Phase phase,
                                 const char* name) {
  schedule::Schedule s = startSchedule(a, name);
  const Phases p = phasesOf(a, t, phase);
  const size_t elem = device::dataTypeSize(a.type);
  auto* send = static_cast<std::byte*>(const_cast<void*>(a.send));
  auto* recv = static_cast<std::byte*>(a.recv);
  struct Region {
    size_t offset, count;  // elements
  };
  std::vector<Region> regions{{0, a.count}};  // regions[i]: what phase i splits
  const size_t k = p.lines.size();
  for (size_t i = 0; i + 1 < k; ++i) {
    const Region r = regions.back();
    const int n = p.lines[i].size(), pos = p.lines[i].pos;
    auto at = [&](std::byte* base, int b) {
      return base + (r.offset + evenBlock(r.count, n, b).offset) * elem;
    };
    p.reduceScatter(
        s, i, [&](int b) { return at(i == 0 ? send : recv, b); }, at(recv, pos),
        [&](int b) { return evenBlock(r.count, n, b).count; }, false);
    const Block mine = evenBlock(r.count, n, pos);
    regions.push_back({r.offset + mine.offset, mine.count});
  }
  const Region last = regions.back();
  if (k == 0) {  // one rank
    s.add(Step{.prim = Primitive::kCopy, .src = a.send, .dst = a.recv, .count = a.count});
    return s;
  }
  p.allReduce(s, k - 1, (k == 1 ? send : recv) + last.offset * elem, recv + last.offset * elem,
              last.count, a.op == device::RedOp::kAvg);
  for (size_t i = k - 1; i-- > 0;) {
    const Region r = regions[i];
    const int n = p.lines[i].size();
    p.allGather(
        s, i, [&](int b) { return recv + (r.offset + evenBlock(r.count, n, b).offset) * elem; },
        [&](int b) { return evenBlock(r.count, n, b).count; });
  }
  return s;
}

schedule::Schedule dimsAllGather(const CollArgs& a, const RankDims& t, Phase phase,
                                 const char* name) {
  schedule::Schedule s = startSchedule(a, name);
  const Phases p = phasesOf(a, t, phase);
  const size_t elem = device::dataTypeSize(a.type);
  auto* recv = static_cast<std::byte*>(a.recv);
  const bool direct = layoutIsRankOrder(a, t, p);
  std::byte* layout = direct ? recv : s.allocScratch(a.nranks * a.count * elem);
  const size_t me = p.layoutIndex(t, a.rank);
  s.add(Step{.prim = Primitive::kCopy,
             .src = a.send,
             .dst = layout + me * a.count * elem,
             .count = a.count});
  for (size_t i = p.lines.size(); i-- > 0;) {
    size_t base = 0;  // my coordinates before phase i, phase i's and later ones at 0
    for (size_t j = 0; j < i; ++j) base += p.lines[j].pos * p.strides[j];
    const size_t stride = p.strides[i] * a.count;
    p.allGather(
        s, i, [&](int b) { return layout + (base * a.count + b * stride) * elem; },
        [&](int) { return stride; });
  }
  if (!direct) permute(s, a, t, p, recv, layout, false);
  return s;
}

schedule::Schedule dimsReduceScatter(const CollArgs& a, const RankDims& t, Phase phase,
                                     const char* name) {
  schedule::Schedule s = startSchedule(a, name);
  const Phases p = phasesOf(a, t, phase);
  const size_t elem = device::dataTypeSize(a.type);
  std::byte* layout = s.allocScratch(std::max<size_t>(1, a.nranks * a.count * elem));
  permute(s, a, t, p, static_cast<std::byte*>(const_cast<void*>(a.send)), layout, true);
  const size_t k = p.lines.size();
  size_t base = 0;
  for (size_t i = 0; i < k; ++i) {
    const size_t stride = p.strides[i] * a.count;
    const size_t at = base * a.count;
    base += p.lines[i].pos * p.strides[i];
    std::byte* out = i + 1 == k ? static_cast<std::byte*>(a.recv) : layout + base * a.count * elem;
    p.reduceScatter(
        s, i, [&](int b) { return layout + (at + b * stride) * elem; }, out,
        [&](int) { return stride; }, i + 1 == k && a.op == device::RedOp::kAvg);
  }
  return s;
}

double dimsEstimate(const CollArgs& a, const RankDims& t, Phase phase, const LinkModel& m) {
  // A reduce-scatter phase per dimension in order and an all-gather phase back (an all-reduce
  // has both; the last dimension's all-reduce is one of each).
  const bool scatter = a.coll != Collective::kAllGather;
  const bool gather = a.coll != Collective::kReduceScatter;
  double us = ownBlockCopyUs(a, m), bytes = totalBytes(a);
  // An all-gather or reduce-scatter whose layout is not rank order permutes every block once
  // (permute: one group of local copies, run one after another on the rank's HBM).
  if (scatter != gather && !layoutIsRankOrder(a, t, phasesOf(a, t, phase))) {
    us += copyUs(m, bytes);
  }
  const std::vector<int> order = dimsOrder(t);
  for (int d : order) {
    const RankDims::Dim& dim = t.dims[static_cast<size_t>(d)];
    const LinkCost link{dim.latencyUs, dim.bandwidth};
    if (phase == Phase::kRing && scatter && gather && d == order.back()) {
      us += pipelinedRingAllReduce(a, m, dim.size, bytes, link);  // fused (ringAllReduce)
    } else if (phase == Phase::kRing) {
      if (scatter) us += pipelinedRingPhase(a, m, dim.size, bytes, link, true);
      if (gather) us += pipelinedRingPhase(a, m, dim.size, bytes, link, false);
    } else {
      if (scatter) us += directPhase(a, m, dim, bytes, true);
      if (gather) us += directPhase(a, m, dim, bytes, false);
    }
    bytes /= dim.size;
  }
  return us;
}

}  // namespace trnccl::algorithms
