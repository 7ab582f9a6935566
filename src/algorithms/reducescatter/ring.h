#pragma once

#include "algorithms/algorithm.h"

namespace trnccl::algorithms::reducescatter {

schedule::Schedule ring(const CollArgs& args);

}  // namespace trnccl::algorithms::reducescatter
