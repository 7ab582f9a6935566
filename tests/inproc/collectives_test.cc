// All-gather, reduce-scatter, broadcast, reduce, all-to-all, gather and scatter over N ranks in
// one process:
// every datatype x valid op x count x rank count x in/out-of-place x root in {0, last}, against
// an independent reference (data movement bitwise; reductions as in allreduce_test.cc).
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "support/collective_cases.h"
#include "support/ranks.h"

namespace trnccl::testing {
namespace {
class Collectives : public ::testing::TestWithParam<Case> {};

TEST_P(Collectives, MatchReference) {
  const Case c = GetParam();
  Ranks& ranks = Ranks::get(c.nranks);
  std::vector<std::vector<unsigned char>> out(c.nranks);
  ranks.run([&](int r) { out[r] = runOnRank(c, r, ranks.comm(r), ranks.stream(r)); });
  for (int r = 0; r < c.nranks; ++r) EXPECT_EQ(countWrong(c, r, out[r]), 0u) << "rank " << r;
  if (sameOnAllRanks(c.coll)) {
    for (int r = 1; r < c.nranks; ++r) EXPECT_TRUE(out[r] == out[0]) << "rank " << r;
  }
}

std::vector<Case> matrix() {
  std::vector<Case> cases;
  const size_t counts[] = {0, 1, 7, 4096 + 3};
  for (int n : {1, 2, 3, 4, 5, 8}) {
    for (int t = 0; t < trncclNumTypes; ++t) {
      auto type = static_cast<trncclDataType_t>(t);
      for (size_t count : counts) {
        for (bool inPlace : {false, true}) {
          cases.push_back({Coll::kAllGather, n, type, trncclSum, count, inPlace, 0});
          cases.push_back({Coll::kAlltoAll, n, type, trncclSum, count, inPlace, 0});
          // Gather and scatter move bytes whatever the type: a few sizes of element suffice.
          if (type == trncclInt8 || type == trncclBfloat16 || type == trncclFloat32 ||
              type == trncclFloat64) {
            for (int root : {0, n - 1}) {
              if (root == n - 1 && n == 1) continue;
              cases.push_back({Coll::kGather, n, type, trncclSum, count, inPlace, root});
              cases.push_back({Coll::kScatter, n, type, trncclSum, count, inPlace, root});
            }
          }
          for (int root : {0, n - 1}) {
            if (root == n - 1 && n == 1) continue;
            cases.push_back({Coll::kBroadcast, n, type, trncclSum, count, inPlace, root});
          }
          for (int o = 0; o < trncclNumOps; ++o) {
            auto op = static_cast<trncclRedOp_t>(o);
            cases.push_back({Coll::kReduceScatter, n, type, op, count, inPlace, 0});
            for (int root : {0, n - 1}) {
              if (root == n - 1 && n == 1) continue;
              cases.push_back({Coll::kReduce, n, type, op, count, inPlace, root});
            }
          }
        }
      }
    }
  }
  // The long sweep (CTest label "long", `make test-long`): 1M+3 for every collective, type, op,
  // rank count, placement and root.
  if (std::getenv("TRNCCL_TEST_LONG") != nullptr) {
    for (const Case& c : std::vector<Case>(cases)) {
      if (c.count == 7) {
        Case big = c;
        big.count = (1u << 20) + 3;
        cases.push_back(big);
      }
    }
    return cases;
  }
  // Large and odd: several pipeline slices per block.
  for (int n : {3, 4}) {
    for (Coll coll : {Coll::kAllGather, Coll::kReduceScatter, Coll::kBroadcast, Coll::kReduce,
                      Coll::kAlltoAll, Coll::kGather, Coll::kScatter}) {
      for (bool inPlace : {false, true}) {
        cases.push_back({coll, n, trncclFloat32, trncclSum, (1u << 20) + 3, inPlace, n - 1});
      }
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Matrix, Collectives, ::testing::ValuesIn(matrix()), caseName);

}  // namespace
}  // namespace trnccl::testing
