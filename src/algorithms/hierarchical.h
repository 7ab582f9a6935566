// Hierarchical across instances: the grid compositions (grid_compose.h) with instances as rows
// and local ranks as columns (rails). All-reduce: intra reduce-scatter -> inter all-reduce ->
// intra all-gather; all-gather does the inter-instance step first, reduce-scatter the
// intra-instance step first, so the network carries the least. Declines on a single instance
// or instances of unequal size.
#pragma once

#include "algorithms/algorithm.h"

namespace trnccl::algorithms {

extern const Algorithm kHierarchicalAllReduce;
extern const Algorithm kHierarchicalAllGather;
extern const Algorithm kHierarchicalReduceScatter;

}  // namespace trnccl::algorithms
