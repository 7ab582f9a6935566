// One-shot all-reduce on the NeuronSwitch (oneshot.cc).
#pragma once

#include "algorithms/algorithm.h"

namespace trnccl::algorithms::allreduce {

extern const Algorithm kOneShot;

}  // namespace trnccl::algorithms::allreduce
