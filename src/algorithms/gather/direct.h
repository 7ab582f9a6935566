// Direct gather (direct.cc).
#pragma once

#include "algorithms/algorithm.h"

namespace trnccl::algorithms::gather {

extern const Algorithm kDirect;

}  // namespace trnccl::algorithms::gather
