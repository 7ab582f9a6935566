// Direct scatter (direct.cc).
#pragma once

#include "algorithms/algorithm.h"

namespace trnccl::algorithms::scatter {

extern const Algorithm kDirect;

}  // namespace trnccl::algorithms::scatter
