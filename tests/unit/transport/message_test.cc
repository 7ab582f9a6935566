// MessageState (transports/core/message.h): one message per direction at a time, and the
// error when a caller starts the next too early.
#include "transports/core/message.h"

#include <gtest/gtest.h>

namespace trnccl::transport {
namespace {

TEST(MessageState, CountsWhatMovedAndClampsOffers) {
  MessageState send("xp", MessageState::Direction::kSend, 3);
  ASSERT_TRUE(send.begin(0x42, 10).isOk());
  EXPECT_EQ(send.tag(), 0x42u);
  EXPECT_EQ(send.bytes(), 10u);
  EXPECT_EQ(send.clamp(25), 10u);
  send.advance(4);
  EXPECT_EQ(send.moved(), 4u);
  EXPECT_EQ(send.left(), 6u);
  EXPECT_EQ(send.clamp(25), 6u);
  EXPECT_EQ(send.clamp(2), 2u);
  EXPECT_FALSE(send.complete());
  send.advance(6);
  EXPECT_TRUE(send.complete());
  EXPECT_EQ(send.clamp(25), 0u);
  ASSERT_TRUE(send.begin(0x43, 0).isOk());  // the next message, empty: complete at once
  EXPECT_TRUE(send.complete());
}

TEST(MessageState, NextSendBeforeTheLastWasTakenIsInvalidUsage) {
  MessageState send("xp", MessageState::Direction::kSend, 3);
  ASSERT_TRUE(send.begin(1, 10).isOk());
  send.advance(5);
  Status status = send.begin(2, 10);
  EXPECT_EQ(status.code(), Code::kInvalidUsage);
  EXPECT_EQ(status.peer(), 3);
  EXPECT_EQ(status.message(),
            "xp: beginSend to rank 3 while 5 bytes of the previous message were not taken");
  EXPECT_EQ(send.tag(), 1u);  // the message in flight is untouched
  EXPECT_EQ(send.moved(), 5u);
}

TEST(MessageState, NextRecvBeforeTheLastArrivedIsInvalidUsage) {
  MessageState recv("xp", MessageState::Direction::kRecv, 0);
  ASSERT_TRUE(recv.begin(1, 7).isOk());
  Status status = recv.begin(2, 7);
  EXPECT_EQ(status.code(), Code::kInvalidUsage);
  EXPECT_EQ(status.peer(), 0);
  EXPECT_EQ(status.message(),
            "xp: beginRecv from rank 0 while 7 bytes of the previous message were not received");
}

}  // namespace
}  // namespace trnccl::transport
