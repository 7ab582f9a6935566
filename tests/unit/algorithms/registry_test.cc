// The registry lists complete descriptors: every field set, one name once per collective, and
// what a descriptor builds carries its name.
#include "algorithms/registry.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "algorithms/cost.h"

namespace trnccl::algorithms {
namespace {

TEST(Registry, EveryDescriptorIsComplete) {
  for (Collective coll : kCollectives) {
    std::set<std::string> names;
    ASSERT_FALSE(algorithmsFor(coll).empty()) << collectiveName(coll);
    for (const Algorithm* algo : algorithmsFor(coll)) {
      ASSERT_NE(algo, nullptr);
      const std::string where = std::string(collectiveName(coll)) + "/" + algo->name;
      EXPECT_TRUE(names.insert(algo->name).second) << where << " listed twice";
      EXPECT_GT(std::string(algo->description).size(), 10u) << where;
      EXPECT_NE(algo->supports, nullptr) << where;
      EXPECT_NE(algo->estimate, nullptr) << where;
      EXPECT_NE(algo->build, nullptr) << where;
    }
  }
}

// A 4-rank call without a topology shape: the flat algorithms take it (the grid ones decline),
// estimate a positive time and build a schedule named after the descriptor.
TEST(Registry, SupportedCallsEstimateAndBuild) {
  std::vector<float> send(4 * 64), recv(4 * 64);
  const LinkModel links;
  for (Collective coll : kCollectives) {
    int supported = 0;
    for (const Algorithm* algo : algorithmsFor(coll)) {
      CollArgs a;
      a.coll = coll;
      a.count = 64;
      a.send = send.data();
      a.recv = recv.data();
      a.rank = 1;
      a.nranks = 4;
      if (!algo->supports(a)) continue;
      ++supported;
      const std::string where = std::string(collectiveName(coll)) + "/" + algo->name;
      EXPECT_GT(algo->estimate(a, links), 0) << where;
      const schedule::Schedule s = algo->build(a);
      EXPECT_EQ(s.algorithm, algo->name) << where;
      EXPECT_FALSE(s.steps().empty()) << where;
    }
    EXPECT_GT(supported, 0) << collectiveName(coll);
  }
}

}  // namespace
}  // namespace trnccl::algorithms
