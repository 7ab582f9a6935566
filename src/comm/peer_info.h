#pragma once

#include "transports/core/transport.h"

namespace trnccl::comm {

// This rank's PeerInfo. Ranks share a hostHash when they are on one host, or, with
// TRNCCL_EMU_RANKS_PER_NODE=k, in one block of k consecutive ranks (an emulated instance).
transport::PeerInfo makeSelfInfo(int rank, int device);

}  // namespace trnccl::comm
