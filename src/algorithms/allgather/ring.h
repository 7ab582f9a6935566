#pragma once

#include "algorithms/algorithm.h"

namespace trnccl::algorithms::allgather {

schedule::Schedule ring(const CollArgs& args);

}  // namespace trnccl::algorithms::allgather
