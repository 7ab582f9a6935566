// Pipelined chain broadcast (chain.cc).
#pragma once

#include "algorithms/algorithm.h"

namespace trnccl::algorithms::broadcast {

extern const Algorithm kChain;

}  // namespace trnccl::algorithms::broadcast
