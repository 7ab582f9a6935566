// Checks over the schedules of all ranks of one call, as the executor needs them: on every
// directed connection the sender's messages and the receiver's receives come in the same order
// with the same sizes (messages are tagged by their index per connection), and no group runs
// two transfers on one connection direction at once.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <utility>
#include <vector>

#include "schedule/schedule.h"

namespace trnccl::algorithms::testing {

inline void expectPairedTransfers(const std::vector<schedule::Schedule>& ranks) {
  std::map<std::pair<int, int>, std::vector<size_t>> sent, received;  // (from, to) -> counts
  for (int r = 0; r < static_cast<int>(ranks.size()); ++r) {
    std::set<int> sendingTo, receivingFrom;  // within the current group
    for (const schedule::Step& st : ranks[r].steps()) {
      if (schedule::sends(st.prim)) {
        ASSERT_GE(st.sendPeer, 0) << "rank " << r;
        EXPECT_NE(st.sendPeer, r) << "rank " << r;
        EXPECT_TRUE(sendingTo.insert(st.sendPeer).second)
            << "rank " << r << " sends to " << st.sendPeer << " twice in one group";
        sent[{r, st.sendPeer}].push_back(st.count);
      }
      if (schedule::receives(st.prim)) {
        ASSERT_GE(st.recvPeer, 0) << "rank " << r;
        EXPECT_TRUE(receivingFrom.insert(st.recvPeer).second)
            << "rank " << r << " receives from " << st.recvPeer << " twice in one group";
        received[{st.recvPeer, r}].push_back(st.count);
      }
      if (!st.withNext) {
        sendingTo.clear();
        receivingFrom.clear();
      }
    }
  }
  EXPECT_EQ(sent, received);
}

}  // namespace trnccl::algorithms::testing
