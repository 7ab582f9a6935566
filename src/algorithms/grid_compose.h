// Two-level collectives on a grid of ranks (rows x columns), shared by the 2D-torus and the
// hierarchical algorithms, which differ only in the grid the topology gives them.
#pragma once

#include "algorithms/algorithm.h"

namespace trnccl::algorithms {

// Row reduce-scatter -> column all-reduce -> row all-gather.
schedule::Schedule gridAllReduce(const CollArgs& a, const Grid& g, const char* name);
// Column all-gather first (the inter-instance step of a hierarchy), then row all-gathers.
schedule::Schedule gridAllGather(const CollArgs& a, const Grid& g, const char* name);
// Row reduce-scatters first (the intra-instance step), then a column reduce-scatter.
schedule::Schedule gridReduceScatter(const CollArgs& a, const Grid& g, const char* name);

}  // namespace trnccl::algorithms
