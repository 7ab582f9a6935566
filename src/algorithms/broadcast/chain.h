#pragma once

#include "algorithms/algorithm.h"

namespace trnccl::algorithms::broadcast {

schedule::Schedule chain(const CollArgs& args);

}  // namespace trnccl::algorithms::broadcast
