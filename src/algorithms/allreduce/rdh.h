#pragma once

#include "algorithms/algorithm.h"

namespace trnccl::algorithms::allreduce {

schedule::Schedule rdh(const CollArgs& args);

}  // namespace trnccl::algorithms::allreduce
