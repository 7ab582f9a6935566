// The tuner's overrides: TRNCCL_ALGO and TRNCCL_NCHANNELS.
//
// When they are read: a communicator reads them once, at init (comm::Config::tuning), as NCCL
// reads its NCCL_* variables, and every call of that communicator plans with those values
// (setting them later changes nothing; a communicator created afterwards sees the new ones).
// Reading them per call cost a getenv() each, a scan of the whole environment (hundreds of
// entries under mpirun), which was ~30 % of a caller's time on a 2-rank 8-byte all-reduce.
// Tools that plan without a communicator (trnccl-topo --tune, trnccl-sim) read them when they
// plan.
#pragma once

#include <string>

namespace trnccl::plan {

struct Overrides {
  std::string algo;  // TRNCCL_ALGO, NCCL's syntax (plan::algoAllowed); "" = the tuner's choice
  int channels = 0;  // TRNCCL_NCHANNELS; <= 0 = the tuner's choice

  // The two variables as they are set now.
  static Overrides fromEnvironment();
  bool operator==(const Overrides&) const = default;
};

}  // namespace trnccl::plan
