#pragma once

#include "algorithms/algorithm.h"

namespace trnccl::algorithms::reduce {

schedule::Schedule chain(const CollArgs& args);

}  // namespace trnccl::algorithms::reduce
