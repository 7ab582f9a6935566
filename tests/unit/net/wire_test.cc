// The wire-header check every protocol over TCP applies first.
#include "transports/net/wire.h"

#include <gtest/gtest.h>

namespace trnccl::transport::net {
namespace {

constexpr Protocol kTest{"test", 0x7472'6e63, 3};

TEST(CheckHeader, AcceptsOwnHeadersUpToTheBound) {
  EXPECT_TRUE(checkHeader(kTest, {kTest.magic, 3, 0}, 0).ok());
  HeaderCheck full = checkHeader(kTest, {kTest.magic, 3, 4096}, 4096);
  EXPECT_TRUE(full.ok());
  EXPECT_EQ(full.problem, "");
}

TEST(CheckHeader, ForeignMagicOrVersion) {
  HeaderCheck http = checkHeader(kTest, {0x2f20'5445'47, 3, 0}, 64);  // "GET / "
  EXPECT_EQ(http.verdict, HeaderVerdict::kForeign);
  EXPECT_EQ(http.problem, "not a test peer: magic 0x2f20544547, expected 0x74726e63");
  HeaderCheck old = checkHeader(kTest, {kTest.magic, 2, 0}, 64);
  EXPECT_EQ(old.verdict, HeaderVerdict::kForeign);
  EXPECT_EQ(old.problem, "test protocol version 2, this side speaks 3");
}

TEST(CheckHeader, LengthBeyondTheBound) {
  HeaderCheck huge = checkHeader(kTest, {kTest.magic, 3, uint64_t{1} << 63}, 4096);
  EXPECT_EQ(huge.verdict, HeaderVerdict::kTooLong);
  EXPECT_EQ(huge.problem, "test header announces 9223372036854775808 bytes, at most 4096 allowed");
  EXPECT_EQ(checkHeader(kTest, {kTest.magic, 3, 4097}, 4096).verdict, HeaderVerdict::kTooLong);
  // A foreign header is foreign whatever length it claims.
  EXPECT_EQ(checkHeader(kTest, {1, 3, 1 << 20}, 4096).verdict, HeaderVerdict::kForeign);
}

}  // namespace
}  // namespace trnccl::transport::net
