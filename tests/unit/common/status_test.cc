// Status and Result<T> (src/common/status.h): an ok Status carries nothing (one null pointer,
// for the hot path), an error keeps its code, message and peer through copies and moves, and
// copies are independent of each other.
#include "common/status.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace {

using trnccl::Code;
using trnccl::Result;
using trnccl::Status;

TEST(Status, OkCarriesNothing) {
  Status ok = Status::ok();
  EXPECT_TRUE(ok.isOk());
  EXPECT_EQ(ok.code(), Code::kOk);
  EXPECT_EQ(ok.message(), "");
  EXPECT_EQ(ok.peer(), -1);
  // A success is a success whatever it was told: its message and peer are not kept.
  Status told(Code::kOk, "fine", 3);
  EXPECT_TRUE(told.isOk());
  EXPECT_EQ(told.message(), "");
  EXPECT_EQ(told.peer(), -1);
  EXPECT_EQ(sizeof(Status), sizeof(void*));
}

TEST(Status, AnErrorSurvivesCopiesAndMoves) {
  Status e(Code::kTimeout, "timed out waiting for peer 2", 2);
  Status copy = e;
  EXPECT_FALSE(copy.isOk());
  EXPECT_EQ(copy.code(), Code::kTimeout);
  EXPECT_EQ(copy.message(), "timed out waiting for peer 2");
  EXPECT_EQ(copy.peer(), 2);
  Status moved = std::move(copy);
  EXPECT_EQ(moved.code(), Code::kTimeout);
  EXPECT_EQ(moved.message(), e.message());
  // Assignments replace, and a copy does not share the original's message.
  Status other(Code::kRemoteError, "gone", 5);
  other = e;
  EXPECT_EQ(other.code(), Code::kTimeout);
  EXPECT_EQ(other.peer(), 2);
  other = Status::ok();
  EXPECT_TRUE(other.isOk());
  EXPECT_EQ(e.message(), "timed out waiting for peer 2");
  Status& self = e;
  e = self;
  EXPECT_EQ(e.code(), Code::kTimeout);
}

TEST(Status, ResultHoldsAValueOrTheError) {
  Result<int> value = 42;
  ASSERT_TRUE(value.isOk());
  EXPECT_EQ(*value, 42);
  EXPECT_TRUE(value.status().isOk());
  Result<int> error = Status(Code::kInvalidArgument, "count overflows", 1);
  ASSERT_FALSE(error.isOk());
  EXPECT_EQ(error.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(error.status().message(), "count overflows");
  EXPECT_EQ(error.status().peer(), 1);
}

}  // namespace
