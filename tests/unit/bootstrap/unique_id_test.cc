// UniqueId encoding, host:port parsing and interface selection syntax.
#include <cstring>
#include <random>

#include "bootstrap/socket.h"
#include "unit/bootstrap/harness.h"

namespace trnccl::bootstrap::test {
namespace {

TEST(UniqueId, RoundTrips) {
  for (const char* host : {"127.0.0.1", "::1", "fd00:1234::42"}) {
    UniqueId id{.magic = 0x1234567890abcdefull, .host = host, .port = 40123, .fromEnv = true};
    char bytes[128];
    id.encode(bytes);
    auto back = UniqueId::decode(bytes);
    ASSERT_TRUE(back.isOk()) << back.status().message();
    EXPECT_EQ(back->magic, id.magic);
    EXPECT_EQ(back->host, id.host);
    EXPECT_EQ(back->port, id.port);
    EXPECT_TRUE(back->fromEnv);
  }
}

TEST(UniqueId, DecodeOfGarbageFails) {
  std::mt19937_64 rng(42);
  char bytes[128];
  for (int i = 0; i < 1000; ++i) {
    for (char& c : bytes) c = static_cast<char>(rng());
    auto id = UniqueId::decode(bytes);
    ASSERT_FALSE(id.isOk());
    EXPECT_EQ(id.status().code(), Code::kInvalidArgument);
  }
  std::memset(bytes, 0, sizeof(bytes));
  EXPECT_FALSE(UniqueId::decode(bytes).isOk());
}

TEST(UniqueId, DecodeDetectsAnyFlippedBit) {
  UniqueId id{.magic = 99, .host = "127.0.0.1", .port = 5000};
  char good[128];
  id.encode(good);
  for (int bit = 0; bit < 128 * 8; ++bit) {
    char bad[128];
    std::memcpy(bad, good, sizeof(bad));
    bad[bit / 8] = static_cast<char>(bad[bit / 8] ^ (1 << (bit % 8)));
    EXPECT_FALSE(UniqueId::decode(bad).isOk()) << "bit " << bit;
  }
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

TEST(ParseHostPort, RejectsWithClearErrors) {
  for (const char* bad :
       {"", "127.0.0.1", "127.0.0.1:", ":1234", "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:12x",
        "127.0.0.1:-5", "::1:1234", "[::1", "[::1]", "[::1]1234", "[]:1234", "host:1234567"}) {
    auto r = parseHostPort(bad);
    ASSERT_FALSE(r.isOk()) << "'" << bad << "'";
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    EXPECT_NE(r.status().message().find("bootstrap"), std::string::npos);
  }
  std::string huge(300, 'a');
  EXPECT_FALSE(parseHostPort(huge + ":80").isOk());
}

TEST(MatchInterface, NcclSyntax) {
  EXPECT_TRUE(matchInterface("eth0", "eth"));
  EXPECT_TRUE(matchInterface("ib1", "eth,ib"));
  EXPECT_FALSE(matchInterface("lo", "eth,ib"));
  EXPECT_FALSE(matchInterface("docker0", "^docker,lo"));
  EXPECT_TRUE(matchInterface("eth0", "^docker,lo"));
  EXPECT_TRUE(matchInterface("eth0", "=eth0"));
  EXPECT_FALSE(matchInterface("eth01", "=eth0"));
  EXPECT_FALSE(matchInterface("eth0", "^=eth0"));
  EXPECT_TRUE(matchInterface("eth01", "^=eth0"));
}

TEST(ChooseHost, ForcedHostWins) {
  setenv("TRNCCL_BOOTSTRAP_HOST", "127.0.0.1", 1);
  auto host = chooseBootstrapHost();
  ASSERT_TRUE(host.isOk());
  EXPECT_EQ(*host, "127.0.0.1");
  setenv("TRNCCL_BOOTSTRAP_HOST", "not-an-address", 1);
  EXPECT_FALSE(chooseBootstrapHost().isOk());
  setenv("TRNCCL_BOOTSTRAP_HOST", "127.0.0.1", 1);
}

}  // namespace
}  // namespace trnccl::bootstrap::test
