// Two-level collectives on a grid of ranks (rows x columns), shared by the 2D-torus and the
// hierarchical algorithms, which differ only in the grid the topology gives them.
#pragma once

#include "algorithms/algorithm.h"
#include "algorithms/cost.h"
#include "algorithms/ring_steps.h"

namespace trnccl::algorithms {

// The column step of gridAllReduce: an all-reduce over a column's members (ringAllReduce, or
// the hierarchy's allreduce::treeAllReduce).
using ColumnAllReduce = void (*)(schedule::Schedule& s, const Ring& column, const std::byte* in,
                                 std::byte* out, size_t count, size_t sliceElems, bool postOp);

// Row reduce-scatter -> column all-reduce -> row all-gather.
schedule::Schedule gridAllReduce(const CollArgs& a, const Grid& g, const char* name,
                                 ColumnAllReduce column = ringAllReduce);
// Column all-gather first (the inter-instance step of a hierarchy), then row all-gathers.
schedule::Schedule gridAllGather(const CollArgs& a, const Grid& g, const char* name);
// Row reduce-scatters first (the intra-instance step), then a column reduce-scatter.
schedule::Schedule gridReduceScatter(const CollArgs& a, const Grid& g, const char* name);

// The model's time of the composition for a.coll on `g`, rows on `row` links and columns on `col`
// links: all-reduce 2 ring phases on each; all-gather and reduce-scatter one on the columns (a
// block per rank) and, on the rows, one ring per row's blocks, one after another.
// Reduce-scatter phases reduce (ringReducePhase).
double gridEstimate(const CollArgs& a, const Grid& g, LinkCost row, LinkCost col,
                    const LinkModel& m);

// What a grid algorithm's descriptors (torus2d.cc, hierarchical.cc) are made of: the
// compositions above on the shape's grid kGrid (declined when it is not usable), rows on
// kRowLink's links (a chip's step of the row's ring) and columns on kColumnLink, schedules
// named kName.
template <const char* kName, Grid Shape::*kGrid,
          LinkCost (*kColumnLink)(const CollArgs&, const LinkModel&),
          LinkCost (*kRowLink)(const LinkModel&) = intraLink>
struct GridAlgorithm {
  static const Grid& grid(const CollArgs& a) { return (*a.shape).*kGrid; }
  static bool supports(const CollArgs& a) { return a.shape && grid(a).usable(a.nranks); }
  static double estimate(const CollArgs& a, const LinkModel& m) {
    return gridEstimate(a, grid(a), ringStepLink(m, kRowLink(m)), kColumnLink(a, m), m);
  }
  static schedule::Schedule allReduce(const CollArgs& a) {
    return gridAllReduce(a, grid(a), kName);
  }
  static schedule::Schedule allGather(const CollArgs& a) {
    return gridAllGather(a, grid(a), kName);
  }
  static schedule::Schedule reduceScatter(const CollArgs& a) {
    return gridReduceScatter(a, grid(a), kName);
  }
  // The descriptor of one of the compositions.
  static constexpr Algorithm describe(const char* description,
                                      schedule::Schedule (*build)(const CollArgs&)) {
    return Algorithm{.name = kName,
                     .description = description,
                     .supports = supports,
                     .estimate = estimate,
                     .usesChannels = false,
                     .build = build};
  }
};

}  // namespace trnccl::algorithms
