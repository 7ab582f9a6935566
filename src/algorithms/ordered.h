// The ordered (deterministic) all-reduce, reduce-scatter and reduce (ordered.cc).
#pragma once

#include "algorithms/algorithm.h"

namespace trnccl::algorithms {

extern const Algorithm kOrderedAllReduce;
extern const Algorithm kOrderedReduceScatter;
extern const Algorithm kOrderedReduce;

}  // namespace trnccl::algorithms
