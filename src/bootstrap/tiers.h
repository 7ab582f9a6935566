// The state of a bootstrap over several roots (trncclCommInitRankScalable; tiered.cc), private
// to bootstrap.cc and tiered.cc.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "bootstrap/bootstrap.h"

namespace trnccl::bootstrap {

struct Bootstrap::Tiers {
  int rank = 0;
  int nranks = 0;
  std::vector<int> groupFirst;  // first rank of each group, ascending, plus nranks at the end
  int group = 0;
  std::unique_ptr<Bootstrap> local;  // this rank's group
  std::unique_ptr<Bootstrap> top;    // the leaders (only on a leader)
  std::vector<std::vector<std::byte>> infos;

  bool leader() const { return top != nullptr; }
  Result<std::vector<std::byte>> allGather(std::span<const std::byte> mine);
  Status barrier();
};

}  // namespace trnccl::bootstrap
