#pragma once

#include "algorithms/algorithm.h"

namespace trnccl::algorithms::allreduce {

schedule::Schedule ring(const CollArgs& args);

}  // namespace trnccl::algorithms::allreduce
