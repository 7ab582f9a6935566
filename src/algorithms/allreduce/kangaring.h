// KangaRing all-reduce: a ring over one primary rank per chip (kangaring.cc).
#pragma once

#include "algorithms/algorithm.h"

namespace trnccl::algorithms::allreduce {

extern const Algorithm kKangaRing;

}  // namespace trnccl::algorithms::allreduce
