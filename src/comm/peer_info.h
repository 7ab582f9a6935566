#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "bootstrap/recovery.h"
#include "common/status.h"
#include "transports/core/transport.h"

namespace trnccl::comm {

// This rank's PeerInfo. Ranks share a hostHash when they are on one host, or, with
// TRNCCL_EMU_RANKS_PER_NODE=k, in one block of k consecutive ranks (an emulated instance).
transport::PeerInfo makeSelfInfo(int rank, int device);

// What a rank checks in with at the bootstrap: its PeerInfo, then its recovery port's address
// (invalid when it has none).
struct RankCard {
  transport::PeerInfo info;
  bootstrap::RecoveryAddress recovery;

  std::vector<std::byte> encode() const;
  static Result<RankCard> decode(std::span<const std::byte> blob, int rank);
};

}  // namespace trnccl::comm
