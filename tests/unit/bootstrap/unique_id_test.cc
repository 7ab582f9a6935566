// UniqueId encoding, and the choice of the root's address. (host:port parsing and the interface
// rule are transports/net's: tests/unit/net.)
#include <cstring>
#include <random>

#include "bootstrap/socket.h"
#include "unit/bootstrap/harness.h"

namespace trnccl::bootstrap::test {
namespace {

TEST(UniqueId, RoundTrips) {
  for (const char* host : {"127.0.0.1", "::1", "fd00:1234::42"}) {
    for (const char* interface : {"", "ens5", "a-15-chars-name"}) {
      UniqueId id{.magic = 0x1234567890abcdefull,
                  .host = host,
                  .port = 40123,
                  .fromEnv = true,
                  .interface = interface};
      char bytes[128];
      id.encode(bytes);
      auto back = UniqueId::decode(bytes);
      ASSERT_TRUE(back.isOk()) << back.status().message();
      EXPECT_EQ(back->magic, id.magic);
      EXPECT_EQ(back->host, id.host);
      EXPECT_EQ(back->port, id.port);
      EXPECT_TRUE(back->fromEnv);
      EXPECT_EQ(back->interface, id.interface);
    }
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

TEST(ChooseHost, ForcedHostWins) {
  setenv("TRNCCL_BOOTSTRAP_HOST", "127.0.0.1", 1);
  auto host = chooseBootstrapHost();
  ASSERT_TRUE(host.isOk());
  EXPECT_EQ(host->address, "127.0.0.1");
  EXPECT_EQ(host->interface, "");
  setenv("TRNCCL_BOOTSTRAP_HOST", "not-an-address", 1);
  EXPECT_FALSE(chooseBootstrapHost().isOk());
  setenv("TRNCCL_BOOTSTRAP_HOST", "127.0.0.1", 1);
}

// Without TRNCCL_BOOTSTRAP_HOST, the root takes the interface the tcp transport would.
TEST(ChooseHost, FollowsSocketIfname) {
  unsetenv("TRNCCL_BOOTSTRAP_HOST");
  setenv("TRNCCL_SOCKET_IFNAME", "=lo", 1);
  setenv("TRNCCL_SOCKET_FAMILY", "AF_INET6", 1);
  Result<RootHost> v6 = chooseBootstrapHost();
  unsetenv("TRNCCL_SOCKET_FAMILY");
  Result<RootHost> v4 = chooseBootstrapHost();
  setenv("TRNCCL_SOCKET_IFNAME", "=no-such-interface", 1);
  Result<RootHost> none = chooseBootstrapHost();
  unsetenv("TRNCCL_SOCKET_IFNAME");
  setenv("TRNCCL_BOOTSTRAP_HOST", "127.0.0.1", 1);
  ASSERT_TRUE(v4.isOk()) << v4.status().message();
  EXPECT_EQ(v4->address, "127.0.0.1");
  EXPECT_EQ(v4->interface, "lo");
  ASSERT_TRUE(v6.isOk()) << v6.status().message();
  EXPECT_EQ(v6->address, "::1");
  ASSERT_FALSE(none.isOk());
  EXPECT_NE(none.status().message().find("no interface matches TRNCCL_SOCKET_IFNAME"),
            std::string::npos)
      << none.status().message();
}

}  // namespace
}  // namespace trnccl::bootstrap::test
