// 2D torus: the grid compositions (grid_compose.h) over the torus rows of chips — row
// reduce-scatter, column all-reduce, row all-gather — so every step moves along physical
// NeuronLinks. Declines when the ranks don't fill at least 2 x 2 of the torus.
#pragma once

#include "algorithms/algorithm.h"

namespace trnccl::algorithms {

extern const Algorithm kTorus2dAllReduce;
extern const Algorithm kTorus2dAllGather;
extern const Algorithm kTorus2dReduceScatter;

}  // namespace trnccl::algorithms
