#pragma once

#include "algorithms/algorithm.h"

namespace trnccl::algorithms {

bool meshSupports(const CollArgs& args);
schedule::Schedule meshAllReduce(const CollArgs& args);
schedule::Schedule meshAllGather(const CollArgs& args);
schedule::Schedule meshReduceScatter(const CollArgs& args);

}  // namespace trnccl::algorithms
