// Composition on an R x C grid (this rank at row i, column j; S = full buffer bytes):
//   all-reduce:     row ring reduce-scatter (C blocks) -> column all-reduce of my block
//                   -> row ring all-gather. Wire bytes per rank: 2(C-1)/C*S on rows,
//                   2(R-1)/(RC)*S on columns. The final value of each element is computed once
//                   (column reduce-scatter owner) and copied, so ranks agree bitwise.
//   all-gather:     column ring all-gather of my block, then for each row t a row ring
//                   all-gather of row t's blocks. Columns carry blocks, rows R(C-1).
//   reduce-scatter: for each row t, a row ring reduce-scatter of the blocks of row t's ranks into
//                   scratch, then a column ring reduce-scatter of those partials into recvbuff.
// The column all-reduce is a ring, or the caller's (the hierarchy's tree, allreduce/tree.h).
// In place follows from the ring pieces: every block is read before its rank's final write.
#include "algorithms/grid_compose.h"

#include "algorithms/patterns.h"
#include "algorithms/ring_steps.h"

namespace trnccl::algorithms {

schedule::Schedule gridAllReduce(const CollArgs& a, const Grid& g, const char* name,
                                 ColumnAllReduce column) {
  schedule::Schedule s = startSchedule(a, name);
  const size_t elem = device::dataTypeSize(a.type);
  const size_t slice = std::max<size_t>(1, a.sliceBytes / elem);
  const auto [i, j] = g.find(a.rank);
  const int C = g.numCols();
  const bool avg = a.op == device::RedOp::kAvg;
  auto* send = static_cast<std::byte*>(const_cast<void*>(a.send));
  auto* recv = static_cast<std::byte*>(a.recv);
  auto off = [&](int b) { return evenBlock(a.count, C, b).offset * elem; };
  auto cnt = [&](int b) { return evenBlock(a.count, C, b).count; };
  Ring row{g.rows[i], j}, col{g.column(j), i};
  ringReduceScatter(
      s, row, [&](int b) { return send + off(b); }, recv + off(j), cnt, slice, false);
  column(s, col, recv + off(j), recv + off(j), cnt(j), slice, avg);
  ringAllGather(
      s, row, [&](int b) { return recv + off(b); }, cnt, slice);
  return s;
}

schedule::Schedule gridAllGather(const CollArgs& a, const Grid& g, const char* name) {
  schedule::Schedule s = startSchedule(a, name);
  const size_t elem = device::dataTypeSize(a.type), block = a.count * elem;
  const size_t slice = std::max<size_t>(1, a.sliceBytes / elem);
  const auto [i, j] = g.find(a.rank);
  auto* recv = static_cast<std::byte*>(a.recv);
  auto cnt = [&](int) { return a.count; };
  s.add(schedule::Step{.prim = schedule::Primitive::kCopy,
                       .src = a.send,
                       .dst = recv + a.rank * block,
                       .count = a.count});
  const std::vector<int> colRanks = g.column(j);
  ringAllGather(
      s, Ring{colRanks, i}, [&](int b) { return recv + colRanks[b] * block; }, cnt, slice);
  for (int t = 0; t < g.numRows(); ++t) {
    const std::vector<int>& rowT = g.rows[t];
    ringAllGather(
        s, Ring{g.rows[i], j}, [&](int b) { return recv + rowT[b] * block; }, cnt, slice);
  }
  return s;
}

schedule::Schedule gridReduceScatter(const CollArgs& a, const Grid& g, const char* name) {
  schedule::Schedule s = startSchedule(a, name);
  const size_t elem = device::dataTypeSize(a.type), block = a.count * elem;
  const size_t slice = std::max<size_t>(1, a.sliceBytes / elem);
  const auto [i, j] = g.find(a.rank);
  const int R = g.numRows();
  auto* send = static_cast<std::byte*>(const_cast<void*>(a.send));
  auto cnt = [&](int) { return a.count; };
  std::byte* partial =
      s.allocScratch(R * block);  // partial[t] = my row's sum of rows[t][j]'s block
  for (int t = 0; t < R; ++t) {
    const std::vector<int>& rowT = g.rows[t];
    ringReduceScatter(
        s, Ring{g.rows[i], j}, [&](int b) { return send + rowT[b] * block; }, partial + t * block,
        cnt, slice, false);
  }
  ringReduceScatter(
      s, Ring{g.column(j), i}, [&](int b) { return partial + b * block; },
      static_cast<std::byte*>(a.recv), cnt, slice, a.op == device::RedOp::kAvg);
  return s;
}

double gridEstimate(const CollArgs& a, const Grid& g, LinkCost row, LinkCost col,
                    const LinkModel& m) {
  const double S = totalBytes(a);
  const int R = g.numRows(), C = g.numCols();
  // Each phase a ring sub-collective, pipelined in slices (pipelinedRingPhase).
  auto phase = [&](int k, double bytes, LinkCost link, bool reduce) {
    return pipelinedRingPhase(a, m, k, bytes, link, reduce);
  };
  if (a.coll == Collective::kAllReduce) {
    // The rows' reduce-scatter and all-gather are rings of their own; the column's
    // all-reduce is the fused ring (pipelinedRingAllReduce).
    return phase(C, S, row, true) + phase(C, S, row, false) +
           pipelinedRingAllReduce(a, m, R, S / C, col);
  }
  // One row ring per row's blocks (S / R each), one after another.
  if (a.coll == Collective::kReduceScatter) {
    return phase(R, S / C, col, true) + R * phase(C, S / R, row, true);
  }
  return ownBlockCopyUs(a, m) + phase(R, S / C, col, false) + R * phase(C, S / R, row, false);
}

}  // namespace trnccl::algorithms
