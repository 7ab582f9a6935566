// One collective case with an algorithm forced as TRNCCL_ALGO would (support/tuning.h), on N
// in-process ranks of a given topology: the forced algorithm must be the one planned, every rank's
// output must match the independent reference, and where all ranks must agree their bytes must be
// identical. Shared by the suites that force algorithms (tests/inproc/algorithms_test.cc,
// fabric_test.cc).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "api/handle.h"
#include "support/collective_cases.h"
#include "support/ranks.h"
#include "support/tuning.h"

namespace trnccl::testing {

struct AlgoCase {
  std::string algo;
  int ranksPerInstance;  // 0: the description's
  Case c;
  std::string topology = "";  // TRNCCL_TOPOLOGY while the communicators are made; "": default
};

inline std::string algoCaseName(const ::testing::TestParamInfo<AlgoCase>& info) {
  return info.param.algo + "_" + caseName({info.param.c, info.index});
}

inline void expectForcedMatchesReference(const AlgoCase& p) {
  const Case& c = p.c;
  Ranks& ranks = Ranks::get(c.nranks, p.ranksPerInstance, p.topology);
  std::vector<std::vector<unsigned char>> out(c.nranks);
  std::vector<std::string> planned(c.nranks);
  {
    ScopedTuning tuning(ranks, p.algo);
    ranks.run([&](int r) {
      out[r] = runOnRank(c, r, ranks.comm(r), ranks.stream(r));
      planned[r] = ranks.comm(r)->impl->lastPlanned();
    });
  }
  if (c.count > 0) {
    EXPECT_EQ(planned[0], p.algo);
  }
  for (int r = 0; r < c.nranks; ++r) EXPECT_EQ(countWrong(c, r, out[r]), 0u) << "rank " << r;
  if (sameOnAllRanks(c.coll)) {
    for (int r = 1; r < c.nranks; ++r) EXPECT_TRUE(out[r] == out[0]) << "rank " << r;
  }
}

}  // namespace trnccl::testing
