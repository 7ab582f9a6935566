// Two-tier all-reduce on a NeuronSwitch of servers (twotier.cc).
#pragma once

#include "algorithms/algorithm.h"

namespace trnccl::algorithms::allreduce {

extern const Algorithm kTwoTier;

}  // namespace trnccl::algorithms::allreduce
