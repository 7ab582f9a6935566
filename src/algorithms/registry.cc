#include "algorithms/registry.h"

#include "algorithms/allreduce/ring.h"

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
  static const std::vector<Algorithm> kNone;
  switch (c) {
    case Collective::kAllReduce: return kAllReduce;
    default: return kNone;
  }
}

}  // namespace trnccl::algorithms
