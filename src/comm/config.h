// Communicator options after defaults and environment are applied.
#pragma once

#include <chrono>
#include <string>

#include "plan/overrides.h"

namespace trnccl::comm {

struct Config {
  bool blocking = true;
  std::chrono::milliseconds initTimeout{120000};  // bootstrap and transport setup
  std::chrono::milliseconds opTimeout{300000};    // one collective
  std::string topology = "trn1.32xlarge";
  std::string transports = "shm,ofi,tcp";  // preference order
  // Reductions bitwise reproducible: only algorithms that fold in rank order run them
  // (algorithms::Algorithm::foldsInRankOrder).
  bool deterministic = false;
  // TRNCCL_ALGO and TRNCCL_NCHANNELS, and TRNCCL_CHECK (comm/check.h): read once, here, like
  // every variable of this struct (plan/overrides.h says why).
  plan::Overrides tuning;
  bool check = false;
};

// Defaults, then TRNCCL_TIMEOUT_MS / TRNCCL_TOPOLOGY / TRNCCL_TRANSPORT / TRNCCL_DETERMINISTIC /
// TRNCCL_ALGO / TRNCCL_NCHANNELS / TRNCCL_CHECK, then the explicit values of a trncclConfig_t
// (passed by the API layer as plain values; 0/empty = unset, and deterministic < 0 = unset).
// Called once per communicator, at init (split and shrink without a config inherit the
// parent's Config instead).
Config resolveConfig(int blocking, int timeoutMs, const char* topology, const char* transports,
                     int deterministic = -1);

}  // namespace trnccl::comm
