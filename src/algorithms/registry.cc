#include "algorithms/registry.h"

#include "algorithms/allgather/ring.h"
#include "algorithms/allreduce/rdh.h"
#include "algorithms/allreduce/ring.h"
#include "algorithms/allreduce/tree.h"
#include "algorithms/alltoall/pairwise.h"
#include "algorithms/broadcast/chain.h"
#include "algorithms/bruck.h"
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

namespace {

// The algorithms of each collective, in the tuner's preference order (ties keep it). Adding an
// algorithm: its file (with its descriptor) and one line here.
constexpr const Algorithm* kAllReduce[] = {
    &allreduce::kRing, &kTorus2dAllReduce, &kHierarchicalAllReduce,
    &kMeshAllReduce,   &allreduce::kRdh,   &allreduce::kTree,
};
constexpr const Algorithm* kAllGather[] = {
    &allgather::kRing, &kTorus2dAllGather, &kHierarchicalAllGather,
    &kMeshAllGather,   &kBruckAllGather,
};
constexpr const Algorithm* kReduceScatter[] = {
    &reducescatter::kRing, &kTorus2dReduceScatter, &kHierarchicalReduceScatter,
    &kMeshReduceScatter,   &kBruckReduceScatter,
};
constexpr const Algorithm* kBroadcast[] = {&broadcast::kChain};
constexpr const Algorithm* kReduce[] = {&reduce::kChain};
constexpr const Algorithm* kAlltoAll[] = {&alltoall::kPairwise};

}  // namespace

std::span<const Algorithm* const> algorithmsFor(Collective c) {
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
  return {};
}

}  // namespace trnccl::algorithms
