// Addresses as trnccl prints and parses them.
#include "transports/net/address.h"

#include <gtest/gtest.h>

namespace trnccl::transport::net {
namespace {

namespace ip = boost::asio::ip;

TEST(NameOf, BracketsIpv6) {
  EXPECT_EQ(nameOf({ip::make_address("10.0.0.7"), 29500}), "10.0.0.7:29500");
  EXPECT_EQ(nameOf({ip::make_address("fd00::2"), 1}), "[fd00::2]:1");
}

TEST(ParseHostPort, Accepts) {
  auto a = parseHostPort("127.0.0.1:1234");
  ASSERT_TRUE(a.isOk());
  EXPECT_EQ(a->first, "127.0.0.1");
  EXPECT_EQ(a->second, 1234);
  auto b = parseHostPort("[::1]:65535");
  ASSERT_TRUE(b.isOk());
  EXPECT_EQ(b->first, "::1");
  EXPECT_EQ(b->second, 65535);
  auto c = parseHostPort("node-7.cluster:1");
  ASSERT_TRUE(c.isOk());
  EXPECT_EQ(c->first, "node-7.cluster");
}

TEST(ParseHostPort, ReadsWhatNameOfPrints) {
  for (const char* address : {"192.0.2.1", "fd00:1234::42"}) {
    auto parsed = parseHostPort(nameOf({ip::make_address(address), 4242}));
    ASSERT_TRUE(parsed.isOk()) << address;
    EXPECT_EQ(parsed->first, address);
    EXPECT_EQ(parsed->second, 4242);
  }
}

TEST(ParseHostPort, RejectsWithClearErrors) {
  for (const char* bad :
       {"", "127.0.0.1", "127.0.0.1:", ":1234", "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:12x",
        "127.0.0.1:-5", "::1:1234", "[::1", "[::1]", "[::1]1234", "[]:1234", "host:1234567"}) {
    auto r = parseHostPort(bad);
    ASSERT_FALSE(r.isOk()) << "'" << bad << "'";
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    if (*bad != '\0') {
      EXPECT_NE(r.status().message().find(bad), std::string::npos) << r.status().message();
    }
  }
  std::string huge(300, 'a');
  auto r = parseHostPort(huge + ":80");
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().message(), "host of 300 chars is too long");
}

TEST(ResolveHost, NumericAsIsNamesLookedUp) {  // never a DNS query: /etc/hosts
  Result<std::string> numeric = resolveHost("fd00::2");
  ASSERT_TRUE(numeric.isOk());
  EXPECT_EQ(*numeric, "fd00::2");
  Result<std::string> local = resolveHost("localhost");
  ASSERT_TRUE(local.isOk()) << local.status().message();
  EXPECT_TRUE(ip::make_address(*local).is_loopback()) << *local;
}

}  // namespace
}  // namespace trnccl::transport::net
