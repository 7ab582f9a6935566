#pragma once

#include "algorithms/algorithm.h"

namespace trnccl::algorithms::alltoall {

schedule::Schedule pairwise(const CollArgs& args);

}  // namespace trnccl::algorithms::alltoall
