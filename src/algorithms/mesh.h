// Mesh (direct) collectives, for the all-to-all switch fabric and small messages (mesh.cc).
#pragma once

#include "algorithms/algorithm.h"

namespace trnccl::algorithms {

extern const Algorithm kMeshAllReduce;
extern const Algorithm kMeshAllGather;
extern const Algorithm kMeshReduceScatter;

}  // namespace trnccl::algorithms
