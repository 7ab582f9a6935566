// What the estimate tests share: a call on a described topology, and one algorithm's estimate.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "algorithms/cost.h"
#include "algorithms/registry.h"
#include "plan/topology_view.h"

namespace trnccl::plan::test {

inline algorithms::CollArgs call(const TopologyView& view, algorithms::Collective coll,
                                 size_t count) {
  algorithms::CollArgs a;
  a.coll = coll;
  a.count = count;
  a.nranks = view.layout->nranks;
  a.shape = view.shape;
  return a;
}

inline double estimateOf(const char* name, const algorithms::CollArgs& a,
                         const algorithms::LinkModel& links) {
  for (const algorithms::Algorithm* algo : algorithms::algorithmsFor(a.coll)) {
    if (std::string(algo->name) == name) return algo->estimate(a, links);
  }
  ADD_FAILURE() << "no " << algorithms::collectiveName(a.coll) << " algorithm " << name;
  return -1;
}

}  // namespace trnccl::plan::test
