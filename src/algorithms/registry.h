// The table of algorithms per collective, in the tuner's default preference order.
#pragma once

#include <vector>

#include "algorithms/algorithm.h"

namespace trnccl::algorithms {

const std::vector<Algorithm>& algorithmsFor(Collective c);

}  // namespace trnccl::algorithms
