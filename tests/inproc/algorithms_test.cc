// Every topology-aware algorithm forced with TRNCCL_ALGO, at rank counts that exercise it (16
// and 32 ranks of an emulated trn1.32xlarge for the torus, 2 emulated instances for the
// hierarchy), over types, ops, odd counts and placements, against the independent reference;
// each case also checks that the forced algorithm is the one that was planned.
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "api/handle.h"
#include "support/collective_cases.h"
#include "support/ranks.h"

namespace trnccl::testing {
namespace {

struct AlgoCase {
  std::string algo;
  int ranksPerInstance;  // 0: one instance
  Case c;
};

std::string algoCaseName(const ::testing::TestParamInfo<AlgoCase>& info) {
  return info.param.algo + "_" + caseName({info.param.c, info.index});
}

class Algorithms : public ::testing::TestWithParam<AlgoCase> {};

TEST_P(Algorithms, ForcedAlgorithmMatchesReference) {
  const AlgoCase& p = GetParam();
  const Case& c = p.c;
  Ranks& ranks = Ranks::get(c.nranks, p.ranksPerInstance);
  setenv("TRNCCL_ALGO", p.algo.c_str(), 1);
  std::vector<std::vector<unsigned char>> out(c.nranks);
  std::vector<std::string> planned(c.nranks);
  ranks.run([&](int r) {
    out[r] = runOnRank(c, r, ranks.comm(r), ranks.stream(r));
    planned[r] = ranks.comm(r)->impl->lastPlanned();
  });
  unsetenv("TRNCCL_ALGO");
  if (c.count > 0) {
    EXPECT_EQ(planned[0], p.algo);
  }
  for (int r = 0; r < c.nranks; ++r) EXPECT_EQ(countWrong(c, r, out[r]), 0u) << "rank " << r;
  if (sameOnAllRanks(c.coll)) {
    for (int r = 1; r < c.nranks; ++r) EXPECT_TRUE(out[r] == out[0]) << "rank " << r;
  }
}

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
