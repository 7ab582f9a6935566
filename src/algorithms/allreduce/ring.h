// Ring all-reduce over the physical rings, on channels (ring.cc).
#pragma once

#include "algorithms/algorithm.h"

namespace trnccl::algorithms::allreduce {

extern const Algorithm kRing;

}  // namespace trnccl::algorithms::allreduce
