// Ring reduce-scatter over the physical rings, on channels (ring.cc).
#pragma once

#include "algorithms/algorithm.h"

namespace trnccl::algorithms::reducescatter {

extern const Algorithm kRing;

}  // namespace trnccl::algorithms::reducescatter
