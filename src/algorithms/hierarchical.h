// Hierarchical across instances: the grid compositions (grid_compose.h) with instances as rows
// and local ranks as columns. A column holds the same chip's rank in every instance, so it
// stays on one EFA rail (that chip's NIC): the inter-instance step runs one sub-collective per
// column, all columns (and so all rails) at once. All-reduce: intra reduce-scatter -> inter
// all-reduce (a ring, or a double binary tree where the model finds it faster) -> intra
// all-gather; all-gather does the inter-instance step first, reduce-scatter the intra-instance
// step first, so the network carries the least. Declines on a single instance or instances of
// unequal size.
#pragma once

#include "algorithms/algorithm.h"
#include "algorithms/cost.h"

namespace trnccl::algorithms {

extern const Algorithm kHierarchicalAllReduce;
extern const Algorithm kHierarchicalAllGather;
extern const Algorithm kHierarchicalReduceScatter;

// Whether the all-reduce's inter-instance step is the double binary tree (else the ring): the
// tree when its estimate on the network beats the ring's for this call's per-column bytes.
bool hierarchicalInterTree(const CollArgs& a, const LinkModel& m);

}  // namespace trnccl::algorithms
