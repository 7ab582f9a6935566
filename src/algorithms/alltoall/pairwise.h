// Pairwise-exchange all-to-all (pairwise.cc).
#pragma once

#include "algorithms/algorithm.h"

namespace trnccl::algorithms::alltoall {

extern const Algorithm kPairwise;

}  // namespace trnccl::algorithms::alltoall
