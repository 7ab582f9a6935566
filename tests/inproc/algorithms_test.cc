// Every topology-aware algorithm forced with TRNCCL_ALGO, at rank counts that exercise it (16
// and 32 ranks of an emulated trn1.32xlarge for the torus, 2 emulated instances for the
// hierarchy), over types, ops, odd counts and placements, against the independent reference;
// each case also checks that the forced algorithm is the one that was planned.
#include <gtest/gtest.h>

#include <vector>

#include "support/forced_algorithm.h"

namespace trnccl::testing {
namespace {

class Algorithms : public ::testing::TestWithParam<AlgoCase> {};

TEST_P(Algorithms, ForcedAlgorithmMatchesReference) { expectForcedMatchesReference(GetParam()); }

std::vector<AlgoCase> matrix() {
  std::vector<AlgoCase> cases;
  auto add = [&](const std::string& algo, int n, int perInstance, bool small) {
    std::vector<size_t> counts = {1, 7, 4096 + 3};
    if (!small) counts.push_back((1u << 18) + 3);
    for (Coll coll : {Coll::kAllReduce, Coll::kAllGather, Coll::kReduceScatter}) {
      if ((algo == "rdh" || algo == "tree") && coll != Coll::kAllReduce) continue;
      if (algo == "bruck" && coll == Coll::kAllReduce) continue;
      for (auto type : {trncclFloat32, trncclBfloat16, trncclInt32, trncclFloat8e4m3}) {
        for (auto op : {trncclSum, trncclAvg, trncclMax}) {
          if (coll == Coll::kAllGather && op != trncclSum) continue;
          for (size_t count : counts) {
            // Mesh only takes small messages (it declines above a connection buffer).
            if (algo == "mesh" && count > 4096 + 3) continue;
            for (bool inPlace : {false, true}) {
              cases.push_back({algo, perInstance, Case{coll, n, type, op, count, inPlace, 0}});
            }
          }
        }
      }
    }
  };
  for (int n : {2, 3, 5, 8}) {
    add("mesh", n, 0, false);
    add("rdh", n, 0, false);
    add("tree", n, 0, false);
    add("bruck", n, 0, n > 3);  // its buffers hold n blocks: the large count at 2 and 3 only
  }
  add("rdh", 16, 0, true);
  add("torus2d", 16, 0, false);      // 8 chips x 2 cores: a 2 x 8 grid of ranks
  add("torus2d", 32, 0, true);       // the whole 4 x 4 torus: 4 x 8
  add("hierarchical", 8, 4, false);  // 2 emulated instances x 4 ranks
  add("hierarchical", 16, 8, true);  // 2 emulated instances x 8 ranks
  add("hierarchical", 12, 4, true);  // 3 instances x 4
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Forced, Algorithms, ::testing::ValuesIn(matrix()), algoCaseName);

// The algorithms for many instances (the double binary tree, Bruck, and the hierarchy whose
// inter-instance step is a tree where the model says so) at the rank counts they are for, with
// TRNCCL_EMU_RANKS_PER_NODE standing in for instances: 32 ranks as 4 instances of 8 and 64 as 8
// of 8 run float32, bfloat16 and int32 x sum and avg x count {0, 1, 7, odd large} x placement
// (every type and op at 16 ranks: tests/mpi, 16 processes as 4 instances of 4). The long sweep
// (TRNCCL_TEST_LONG=1) runs every type x op at 16 (4 x 4), 32 and 64 ranks.
std::vector<AlgoCase> scaleMatrix() {
  std::vector<AlgoCase> cases;
  const bool long_ = std::getenv("TRNCCL_TEST_LONG") != nullptr;
  struct Scale {
    int n, perInstance;
    bool full;
  };
  for (Scale sc : {Scale{16, 4, true}, Scale{32, 8, long_}, Scale{64, 8, long_}}) {
    if (sc.n == 16 && !long_) continue;
    std::vector<trncclDataType_t> types = {trncclFloat32, trncclBfloat16, trncclInt32};
    std::vector<trncclRedOp_t> ops = {trncclSum, trncclAvg};
    if (sc.full) {
      types.clear();
      ops.clear();
      for (int t = 0; t < trncclNumTypes; ++t) types.push_back(static_cast<trncclDataType_t>(t));
      for (int o = 0; o < trncclNumOps; ++o) ops.push_back(static_cast<trncclRedOp_t>(o));
    }
    auto add = [&](const std::string& algo, Coll coll) {
      // Odd and large: several pipeline chunks per tree half; per rank for all-gather and
      // reduce-scatter, whose buffers hold n blocks.
      const size_t large = coll == Coll::kAllReduce ? (1u << 18) + 3 : 4096 + 3;
      for (auto type : types) {
        for (auto op : ops) {
          if (coll == Coll::kAllGather && op != trncclSum) continue;
          for (size_t count : {size_t{0}, size_t{1}, size_t{7}, large}) {
            for (bool inPlace : {false, true}) {
              cases.push_back(
                  {algo, sc.perInstance, Case{coll, sc.n, type, op, count, inPlace, 0}});
            }
          }
        }
      }
    };
    add("tree", Coll::kAllReduce);
    add("hierarchical", Coll::kAllReduce);
    add("bruck", Coll::kAllGather);
    add("bruck", Coll::kReduceScatter);
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Scale, Algorithms, ::testing::ValuesIn(scaleMatrix()), algoCaseName);

}  // namespace
}  // namespace trnccl::testing
