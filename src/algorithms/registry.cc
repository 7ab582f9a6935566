#include "algorithms/registry.h"

#include "algorithms/allgather/ring.h"
#include "algorithms/allreduce/ring.h"
#include "algorithms/alltoall/pairwise.h"
#include "algorithms/broadcast/chain.h"
#include "algorithms/reduce/chain.h"
#include "algorithms/reducescatter/ring.h"

namespace trnccl::algorithms {

const char* collectiveName(Collective c) {
  switch (c) {
    case Collective::kAllReduce: return "allreduce";
    case Collective::kAllGather: return "allgather";
    case Collective::kReduceScatter: return "reducescatter";
    case Collective::kBroadcast: return "broadcast";
    case Collective::kReduce: return "reduce";
    case Collective::kAlltoAll: return "alltoall";
  }
  return "?";
}

const std::vector<Algorithm>& algorithmsFor(Collective c) {
  static const std::vector<Algorithm> kAllReduce = {
      {"ring", "reduce-scatter ring then all-gather ring, pipelined in slices",
       [](const CollArgs&) { return true; }, allreduce::ring},
  };
  static const std::vector<Algorithm> kAllGather = {
      {"ring", "each block travels once around the ring, pipelined in slices",
       [](const CollArgs&) { return true; }, allgather::ring},
  };
  static const std::vector<Algorithm> kReduceScatter = {
      {"ring", "ring reduce-scatter, pipelined in slices", [](const CollArgs&) { return true; },
       reducescatter::ring},
  };
  static const std::vector<Algorithm> kBroadcast = {
      {"chain", "pipelined chain from the root", [](const CollArgs&) { return true; },
       broadcast::chain},
  };
  static const std::vector<Algorithm> kReduce = {
      {"chain", "pipelined chain ending at the root", [](const CollArgs&) { return true; },
       reduce::chain},
  };
  static const std::vector<Algorithm> kAlltoAll = {
      {"pairwise", "n-1 concurrent pairwise exchanges", [](const CollArgs&) { return true; },
       alltoall::pairwise},
  };
  switch (c) {
    case Collective::kAllReduce: return kAllReduce;
    case Collective::kAllGather: return kAllGather;
    case Collective::kReduceScatter: return kReduceScatter;
    case Collective::kBroadcast: return kBroadcast;
    case Collective::kReduce: return kReduce;
    case Collective::kAlltoAll: return kAlltoAll;
  }
  return kAllReduce;
}

}  // namespace trnccl::algorithms
