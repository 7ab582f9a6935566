// The world of the mpirun suite: one trnccl rank per MPI process, set up by main.cc.
#pragma once

#include "trnccl/trnccl.h"

namespace trnccl::testing {

extern int worldRank;
extern int worldSize;
extern trncclComm_t worldComm;
extern trnrtStream_t worldStream;

}  // namespace trnccl::testing
