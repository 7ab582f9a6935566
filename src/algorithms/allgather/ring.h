// Ring all-gather over the physical rings, on channels (ring.cc).
#pragma once

#include "algorithms/algorithm.h"

namespace trnccl::algorithms::allgather {

extern const Algorithm kRing;

}  // namespace trnccl::algorithms::allgather
