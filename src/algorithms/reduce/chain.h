// Pipelined chain reduce (chain.cc).
#pragma once

#include "algorithms/algorithm.h"

namespace trnccl::algorithms::reduce {

extern const Algorithm kChain;

}  // namespace trnccl::algorithms::reduce
