// The engine's message table (src/sim/engine_state.h): a connection's first message lives in
// the connection's own slot, further ones at once in a pool; each connection's queue matches
// the two sides' messages in the order each side began them.
#include <gtest/gtest.h>

#include <vector>

#include "sim/engine_state.h"

namespace trnccl::sim::engine_state {
namespace {

class MessagesTest : public ::testing::Test {
 protected:
  // Connection 0: rank 0 -> 1 on route 5; connection 1: rank 1 -> 0 on route 7.
  void SetUp() override { msgs.reset({{0, 1, 5}, {1, 0, 7}}, 16); }

  MsgTable table;
  std::vector<int32_t> second;
  Messages msgs{table, second};
};

TEST_F(MessagesTest, AConnectionsFirstMessageIsItsSlot) {
  const int32_t id = msgs.post(1, /*sender=*/true, 10, 100);
  EXPECT_EQ(id, 1);
  EXPECT_EQ(msgs.head(1), 1);
  EXPECT_EQ(msgs.head(0), -1);
  EXPECT_EQ(msgs[id].bytes, 100u);
  EXPECT_EQ(msgs[id].sendStep, 10u);
  EXPECT_EQ(msgs[id].recvStep, kNone);
  // The receiver's step matches it and takes it off the queue.
  EXPECT_EQ(msgs.post(1, /*sender=*/false, 20, 100), 1);
  EXPECT_EQ(msgs[id].recvStep, 20u);
  EXPECT_EQ(msgs.head(1), -1);
  EXPECT_EQ(msgs.allocated(), 1u);
}

TEST_F(MessagesTest, MoreMessagesAtOnceComeFromThePoolInOrder) {
  std::vector<int32_t> sent;
  for (uint32_t k = 0; k < 4; ++k) sent.push_back(msgs.post(0, true, k, 100 + k));
  EXPECT_EQ(sent[0], 0);  // the slot
  for (size_t k = 1; k < sent.size(); ++k) {
    EXPECT_GE(sent[k], 2) << "pooled, behind both slots";
    EXPECT_EQ(msgs[sent[k]].from, 0);  // a pooled message carries its connection's ends, route
    EXPECT_EQ(msgs[sent[k]].to, 1);
    EXPECT_EQ(msgs[sent[k]].route, 5u);
  }
  // The receives match them in the order they were sent, whatever table they are in.
  for (uint32_t k = 0; k < 4; ++k) {
    EXPECT_EQ(msgs.head(0), sent[k]);
    const int32_t id = msgs.post(0, false, 10 + k, 100 + k);
    EXPECT_EQ(id, sent[k]);
    EXPECT_EQ(msgs[id].bytes, 100u + k);
    EXPECT_EQ(msgs[id].sendStep, k);
    EXPECT_EQ(msgs[id].recvStep, 10u + k);
  }
  EXPECT_EQ(msgs.head(0), -1);
  EXPECT_EQ(msgs.allocated(), 4u);
}

TEST_F(MessagesTest, ReceivesQueueToo) {
  const int32_t a = msgs.post(0, false, 1, 8);
  const int32_t b = msgs.post(0, false, 2, 16);  // the same side: queued behind, never matched
  EXPECT_NE(a, b);
  EXPECT_EQ(msgs.head(0), a);
  EXPECT_EQ(msgs.post(0, true, 3, 8), a);
  EXPECT_EQ(msgs.head(0), b);
  EXPECT_EQ(msgs.post(0, true, 4, 16), b);
  EXPECT_EQ(msgs.head(0), -1);
}

TEST_F(MessagesTest, ReleasedMessagesAreReused) {
  const int32_t a = msgs.post(0, true, 1, 8);  // the slot
  const int32_t b = msgs.post(0, true, 2, 8);  // pooled
  msgs.post(0, false, 3, 8);
  msgs.post(0, false, 4, 8);
  msgs.release(b);
  // The slot is still in use: the next message takes the pooled one released.
  EXPECT_EQ(msgs.post(0, true, 5, 8), b);
  msgs.release(a);
  EXPECT_EQ(msgs.post(0, true, 6, 8), a) << "the slot, once free";
  // Fresh state: nothing of the earlier message is left.
  EXPECT_EQ(msgs[a].recvStep, kNone);
  EXPECT_EQ(msgs[a].forward, -1);
  EXPECT_FALSE(msgs[a].has(Msg::kStarted));
  EXPECT_EQ(msgs.head(0), b);  // b, then a, still wait for their receives
}

TEST_F(MessagesTest, DuplicatedWritesLinkTheirSecondMessage) {
  const int32_t a = msgs.post(0, true, 1, 8);
  const int32_t b = msgs.post(1, true, 1, 8);
  EXPECT_EQ(msgs.second(a), -1);
  msgs.setSecond(a, b);
  EXPECT_EQ(msgs.second(a), b);
  EXPECT_EQ(msgs.second(b), -1);
  msgs.post(0, false, 2, 8);
  msgs.release(a);
  EXPECT_EQ(msgs.second(msgs.post(0, true, 3, 8)), -1) << "a new message has no second";
}

TEST_F(MessagesTest, ResetEmptiesEveryQueue) {
  msgs.post(0, true, 1, 8);
  msgs.post(0, true, 2, 8);
  msgs.reset({{0, 1, 5}, {1, 0, 7}, {0, 2, 9}}, 16);
  EXPECT_EQ(msgs.head(0), -1);
  EXPECT_EQ(msgs.head(2), -1);
  EXPECT_EQ(msgs.post(0, false, 3, 8), 0);
  EXPECT_EQ(msgs.allocated(), 1u);
}

}  // namespace
}  // namespace trnccl::sim::engine_state
