// The state of a bootstrap over several roots (trncclCommInitRankScalable; tiered.cc), private
// to bootstrap.cc and tiered.cc.
#pragma once

#include <atomic>
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

  // A leader passes the first failure of either session on to the other (relayFrom*), once.
  std::atomic<bool> relayed{false};

  bool leader() const { return top != nullptr; }
  Result<std::vector<std::byte>> allGather(std::span<const std::byte> mine);
  Status barrier();
  Status checkRoot(bool rootExitFails);
  void revoke();
  // `s`, after passing it on when it is a failure of the group's session (to the leaders') or
  // of the leaders' session (to the group).
  Status relayFromLocal(Status s);
  Status relayFromTop(Status s);
};

}  // namespace trnccl::bootstrap
