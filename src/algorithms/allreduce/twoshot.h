// Two-shot all-reduce on the NeuronSwitch (twoshot.cc).
#pragma once

#include "algorithms/algorithm.h"

namespace trnccl::algorithms::allreduce {

extern const Algorithm kTwoShot;

}  // namespace trnccl::algorithms::allreduce
