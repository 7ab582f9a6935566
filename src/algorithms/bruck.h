// Bruck's logarithmic all-gather and reduce-scatter (bruck.cc), for small sizes at scale.
#pragma once

#include "algorithms/algorithm.h"

namespace trnccl::algorithms {

extern const Algorithm kBruckAllGather;
extern const Algorithm kBruckReduceScatter;

}  // namespace trnccl::algorithms
