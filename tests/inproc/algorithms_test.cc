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
      if (algo == "rdh" && coll != Coll::kAllReduce) continue;
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

}  // namespace
}  // namespace trnccl::testing
