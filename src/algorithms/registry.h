// The registry: every algorithm's descriptor per collective, in the tuner's default preference
// order. Descriptors live beside their builders; this table only lists them.
#pragma once

#include <span>

#include "algorithms/algorithm.h"

namespace trnccl::algorithms {

std::span<const Algorithm* const> algorithmsFor(Collective c);

}  // namespace trnccl::algorithms
