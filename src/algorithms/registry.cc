#include "algorithms/registry.h"

#include "algorithms/allgather/ring.h"
#include "algorithms/allreduce/rdh.h"
#include "algorithms/allreduce/ring.h"
#include "algorithms/alltoall/pairwise.h"
#include "algorithms/broadcast/chain.h"
#include "algorithms/hierarchical.h"
#include "algorithms/mesh.h"
#include "algorithms/reduce/chain.h"
#include "algorithms/reducescatter/ring.h"
#include "algorithms/torus2d.h"

namespace trnccl::algorithms {

const char* collectiveName(Collective c) {
  switch (c) {
    case Collective::kAllReduce:
      return "allreduce";
    case Collective::kAllGather:
      return "allgather";
    case Collective::kReduceScatter:
      return "reducescatter";
    case Collective::kBroadcast:
      return "broadcast";
    case Collective::kReduce:
      return "reduce";
    case Collective::kAlltoAll:
      return "alltoall";
  }
  return "?";
}

const std::vector<Algorithm>& algorithmsFor(Collective c) {
  auto always = [](const CollArgs&) { return true; };
  static const std::vector<Algorithm> kAllReduce = {
      {"ring", "reduce-scatter ring then all-gather ring, pipelined in slices", always,
       allreduce::ring},
      {"torus2d", "row reduce-scatter, column all-reduce, row all-gather on the torus",
       torus2dSupports, torus2dAllReduce},
      {"hierarchical", "intra reduce-scatter, inter all-reduce, intra all-gather",
       hierarchicalSupports, hierarchicalAllReduce},
      {"mesh", "direct exchange with every peer in two rounds (small messages)", meshSupports,
       meshAllReduce},
      {"rdh", "recursive halving then doubling; non-powers of two folded",
       [](const CollArgs& a) { return a.nranks > 1; }, allreduce::rdh},
  };
  static const std::vector<Algorithm> kAllGather = {
      {"ring", "each block travels once around the ring, pipelined in slices", always,
       allgather::ring},
      {"torus2d", "column all-gather, then row all-gathers on the torus", torus2dSupports,
       torus2dAllGather},
      {"hierarchical", "inter-instance all-gather first, then intra", hierarchicalSupports,
       hierarchicalAllGather},
      {"mesh", "every rank sends its block to every peer directly", meshSupports, meshAllGather},
  };
  static const std::vector<Algorithm> kReduceScatter = {
      {"ring", "ring reduce-scatter, pipelined in slices", always, reducescatter::ring},
      {"torus2d", "row reduce-scatters, then a column reduce-scatter on the torus", torus2dSupports,
       torus2dReduceScatter},
      {"hierarchical", "intra-instance reduce-scatter first, then inter", hierarchicalSupports,
       hierarchicalReduceScatter},
      {"mesh", "direct exchange with every peer in one round", meshSupports, meshReduceScatter},
  };
  static const std::vector<Algorithm> kBroadcast = {
      {"chain", "pipelined chain from the root", always, broadcast::chain},
  };
  static const std::vector<Algorithm> kReduce = {
      {"chain", "pipelined chain ending at the root", always, reduce::chain},
  };
  static const std::vector<Algorithm> kAlltoAll = {
      {"pairwise", "n-1 concurrent pairwise exchanges", always, alltoall::pairwise},
  };
  switch (c) {
    case Collective::kAllReduce:
      return kAllReduce;
    case Collective::kAllGather:
      return kAllGather;
    case Collective::kReduceScatter:
      return kReduceScatter;
    case Collective::kBroadcast:
      return kBroadcast;
    case Collective::kReduce:
      return kReduce;
    case Collective::kAlltoAll:
      return kAlltoAll;
  }
  return kAllReduce;
}

}  // namespace trnccl::algorithms
