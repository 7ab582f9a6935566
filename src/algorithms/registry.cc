#include "algorithms/registry.h"

#include "algorithms/allgather/ring.h"
#include "algorithms/allreduce/kangaring.h"
#include "algorithms/allreduce/oneshot.h"
#include "algorithms/allreduce/rdh.h"
#include "algorithms/allreduce/ring.h"
#include "algorithms/allreduce/tree.h"
#include "algorithms/allreduce/twoshot.h"
#include "algorithms/allreduce/twotier.h"
#include "algorithms/alltoall/pairwise.h"
#include "algorithms/broadcast/chain.h"
#include "algorithms/bruck.h"
#include "algorithms/gather/direct.h"
#include "algorithms/hierarchical.h"
#include "algorithms/mesh.h"
#include "algorithms/ordered.h"
#include "algorithms/reduce/chain.h"
#include "algorithms/reducescatter/ring.h"
#include "algorithms/scatter/direct.h"
#include "algorithms/torus2d.h"
#include "algorithms/torus3d.h"

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
    case Collective::kGather:
      return "gather";
    case Collective::kScatter:
      return "scatter";
  }
  return "?";
}

namespace {

// The algorithms of each collective, in the tuner's preference order (ties keep it). Adding an
// algorithm: its file (with its descriptor) and one line here.
constexpr const Algorithm* kAllReduce[] = {
    &allreduce::kRing, &kTorus2dAllReduce, &kHierarchicalAllReduce, &kMeshAllReduce,
    &allreduce::kRdh,
    &allreduce::kTree,  // double binary tree (flat, and the hierarchy's inter-instance step)
    // The Trainium fabrics' own (issue 16).
    &allreduce::kKangaRing,  // torus: a ring over one primary rank per chip
    &kTorus3dAllReduce,      // 3D torus
    &allreduce::kOneShot,    // NeuronSwitch
    &allreduce::kTwoShot, &allreduce::kTwoTier,
    &kOrderedAllReduce,  // deterministic mode's (Algorithm::foldsInRankOrder)
};
constexpr const Algorithm* kAllGather[] = {
    &allgather::kRing, &kTorus2dAllGather, &kHierarchicalAllGather,
    &kMeshAllGather,   &kBruckAllGather,   &kTorus3dAllGather,
};
constexpr const Algorithm* kReduceScatter[] = {
    &reducescatter::kRing, &kTorus2dReduceScatter, &kHierarchicalReduceScatter, &kMeshReduceScatter,
    &kBruckReduceScatter,  &kTorus3dReduceScatter, &kOrderedReduceScatter,
};
constexpr const Algorithm* kBroadcast[] = {&broadcast::kChain};
constexpr const Algorithm* kReduce[] = {&reduce::kChain, &kOrderedReduce};
constexpr const Algorithm* kAlltoAll[] = {&alltoall::kPairwise};
constexpr const Algorithm* kGather[] = {&gather::kDirect};
constexpr const Algorithm* kScatter[] = {&scatter::kDirect};

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
    case Collective::kGather:
      return kGather;
    case Collective::kScatter:
      return kScatter;
  }
  return {};
}

}  // namespace trnccl::algorithms
