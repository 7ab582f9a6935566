// Recursive halving / doubling all-reduce (rdh.cc).
#pragma once

#include "algorithms/algorithm.h"

namespace trnccl::algorithms::allreduce {

extern const Algorithm kRdh;

}  // namespace trnccl::algorithms::allreduce
