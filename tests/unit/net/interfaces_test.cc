// TRNCCL_SOCKET_IFNAME and TRNCCL_SOCKET_FAMILY: NCCL's interface syntax and the one selection
// rule the bootstrap root and the tcp transport share.
#include "transports/net/interfaces.h"

#include <gtest/gtest.h>

namespace trnccl::transport::net {
namespace {

namespace ip = boost::asio::ip;

Interface at(const char* name, const char* address) { return {name, ip::make_address(address)}; }

std::string chosen(const std::vector<Interface>& all, std::string_view spec,
                   std::string_view family = "") {
  Result<Interface> result = selectInterface(all, spec, family);
  if (!result) return "error: " + result.status().message();
  return result->name + " " + result->address.to_string();
}

TEST(MatchInterface, NcclSyntax) {
  struct Case {
    const char* name;
    const char* spec;
    bool selected;
  };
  for (const Case& c : std::initializer_list<Case>{
           // Prefixes.
           {"eth0", "eth", true},
           {"eth1", "ib,eth", true},
           {"ib0", "eth", false},
           {"et", "eth", false},
           {"lo", "eth,ib", false},
           {"eth0", "", false},
           {"eth0", ",,", false},
           // '^' excludes.
           {"docker0", "^docker,lo", false},
           {"lo", "^docker,lo", false},
           {"eth0", "^docker,lo", true},
           {"eth0", "^", true},
           // '=' exact names.
           {"eth0", "=eth0", true},
           {"eth01", "=eth0", false},
           {"eth", "=eth0", false},
           {"ib1", "=eth0,ib1", true},
           {"eth0", "^=eth0", false},
           {"eth01", "^=eth0", true},
       }) {
    EXPECT_EQ(matchInterface(c.name, c.spec), c.selected) << c.name << " by '" << c.spec << "'";
  }
}

TEST(SelectInterface, DefaultSkipsLoopbackAndDocker) {
  std::vector<Interface> all = {at("lo", "127.0.0.1"), at("docker0", "172.17.0.1"),
                                at("eth0", "10.1.2.3")};
  EXPECT_EQ(chosen(all, ""), "eth0 10.1.2.3");
  // Even an IPv6-only interface comes before loopback and docker.
  EXPECT_EQ(chosen({at("lo", "127.0.0.1"), at("docker0", "172.17.0.1"), at("ens5", "fd00::2")}, ""),
            "ens5 fd00::2");
}

TEST(SelectInterface, DefaultFallsBackToDockerThenLoopback) {
  EXPECT_EQ(chosen({at("lo", "127.0.0.1"), at("docker0", "172.17.0.1")}, ""), "docker0 172.17.0.1");
  EXPECT_EQ(chosen({at("lo", "127.0.0.1"), at("lo", "::1")}, ""), "lo 127.0.0.1");
  EXPECT_EQ(chosen({at("lo", "::1")}, ""), "lo ::1");
}

TEST(SelectInterface, SpecSelects) {
  std::vector<Interface> all = {at("lo", "127.0.0.1"), at("eth0", "10.1.2.3"),
                                at("ib0", "192.168.0.7"), at("eth10", "10.9.9.9"),
                                at("docker0", "172.17.0.1")};
  EXPECT_EQ(chosen(all, "ib"), "ib0 192.168.0.7");
  EXPECT_EQ(chosen(all, "lo"), "lo 127.0.0.1");  // named: loopback is fine
  EXPECT_EQ(chosen(all, "docker"), "docker0 172.17.0.1");
  EXPECT_EQ(chosen(all, "=eth10"), "eth10 10.9.9.9");
  EXPECT_EQ(chosen(all, "^eth,lo"), "ib0 192.168.0.7");
  EXPECT_EQ(chosen(all, "^=eth0,lo,ib0"), "eth10 10.9.9.9");
  // An exclusion list is the whole rule: what it leaves is used in order, loopback included.
  EXPECT_EQ(chosen(all, "^eth"), "lo 127.0.0.1");
}

TEST(SelectInterface, Ipv4PreferredIpv6Supported) {
  std::vector<Interface> all = {at("eth0", "fd00::2"), at("eth0", "10.0.0.2"),
                                at("ib0", "fd00::7")};
  EXPECT_EQ(chosen(all, "eth"), "eth0 10.0.0.2");
  EXPECT_EQ(chosen(all, "ib"), "ib0 fd00::7");
  EXPECT_EQ(chosen(all, "eth", "AF_INET6"), "eth0 fd00::2");
  EXPECT_EQ(chosen(all, "ib", "AF_INET"),
            "error: net: no AF_INET interface matches TRNCCL_SOCKET_IFNAME=ib (up: eth0 fd00::2, "
            "eth0 10.0.0.2, ib0 fd00::7)");
}

TEST(SelectInterface, Errors) {
  std::vector<Interface> all = {at("lo", "127.0.0.1")};
  EXPECT_EQ(chosen(all, "eth"),
            "error: net: no interface matches TRNCCL_SOCKET_IFNAME=eth (up: lo 127.0.0.1)");
  EXPECT_EQ(chosen(all, "", "AF_UNIX"),
            "error: net: TRNCCL_SOCKET_FAMILY=AF_UNIX is neither AF_INET nor AF_INET6");
  EXPECT_EQ(chosen({}, ""), "error: net: no usable interface (up: none)");
}

// This machine's loopback is always there, and is what the other tests listen on.
TEST(LocalInterfaces, LoopbackIsListed) {
  bool found = false;
  for (const Interface& i : localInterfaces()) {
    found |= i.name == "lo" && i.address == ip::make_address("127.0.0.1");
    EXPECT_FALSE(i.address.is_v6() && i.address.to_v6().is_link_local()) << i.name;
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace trnccl::transport::net
