// N-dimensional torus (torus3d.cc): ring phases along every dimension of a 3D-torus
// description — a chip's cores, X, Y, and Z across the instances of a Trn2 UltraServer — in
// the order the cost model finds cheapest. Declines unless the ranks fill a box with at least
// two dimensions of size > 1.
#pragma once

#include "algorithms/algorithm.h"

namespace trnccl::algorithms {

extern const Algorithm kTorus3dAllReduce;
extern const Algorithm kTorus3dAllGather;
extern const Algorithm kTorus3dReduceScatter;

}  // namespace trnccl::algorithms
