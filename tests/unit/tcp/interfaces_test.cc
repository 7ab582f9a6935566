// TRNCCL_SOCKET_IFNAME and TRNCCL_SOCKET_FAMILY: NCCL's interface selection syntax and the
// listener address chosen from a given interface list.
#include "transports/tcp/interfaces.h"

#include <gtest/gtest.h>

namespace trnccl::transport::tcp {
namespace {

namespace ip = boost::asio::ip;

Interface at(const char* name, const char* address) { return {name, ip::make_address(address)}; }

std::string chosen(const std::vector<Interface>& all, std::string_view spec,
                   std::string_view family = "") {
  Result<Interface> result = selectInterface(all, spec, family);
  if (!result) return "error: " + result.status().message();
  return result->name + " " + result->address.to_string();
}

TEST(TcpInterfaces, PrefixMatch) {
  EXPECT_TRUE(matchInterface("eth0", "eth"));
  EXPECT_TRUE(matchInterface("eth1", "ib,eth"));
  EXPECT_FALSE(matchInterface("ib0", "eth"));
  EXPECT_FALSE(matchInterface("et", "eth"));
  EXPECT_FALSE(matchInterface("eth0", ""));
  EXPECT_FALSE(matchInterface("eth0", ",,"));
}

TEST(TcpInterfaces, ExcludeMatch) {
  EXPECT_FALSE(matchInterface("docker0", "^docker,lo"));
  EXPECT_FALSE(matchInterface("lo", "^docker,lo"));
  EXPECT_TRUE(matchInterface("eth0", "^docker,lo"));
  EXPECT_TRUE(matchInterface("eth0", "^"));
}

TEST(TcpInterfaces, ExactMatch) {
  EXPECT_TRUE(matchInterface("eth0", "=eth0"));
  EXPECT_FALSE(matchInterface("eth01", "=eth0"));
  EXPECT_FALSE(matchInterface("eth", "=eth0"));
  EXPECT_TRUE(matchInterface("ib1", "=eth0,ib1"));
  EXPECT_FALSE(matchInterface("eth0", "^=eth0"));
  EXPECT_TRUE(matchInterface("eth01", "^=eth0"));
}

TEST(TcpInterfaces, DefaultSkipsLoopbackAndDocker) {
  std::vector<Interface> all = {at("lo", "127.0.0.1"), at("docker0", "172.17.0.1"),
                                at("eth0", "10.1.2.3")};
  EXPECT_EQ(chosen(all, ""), "eth0 10.1.2.3");
}

TEST(TcpInterfaces, DefaultFallsBackToDockerThenLoopback) {
  EXPECT_EQ(chosen({at("lo", "127.0.0.1"), at("docker0", "172.17.0.1")}, ""), "docker0 172.17.0.1");
  EXPECT_EQ(chosen({at("lo", "127.0.0.1"), at("lo", "::1")}, ""), "lo 127.0.0.1");
  EXPECT_EQ(chosen({at("lo", "::1")}, ""), "lo ::1");
}

TEST(TcpInterfaces, SpecSelects) {
  std::vector<Interface> all = {at("lo", "127.0.0.1"), at("eth0", "10.1.2.3"),
                                at("ib0", "192.168.0.7"), at("eth10", "10.9.9.9")};
  EXPECT_EQ(chosen(all, "ib"), "ib0 192.168.0.7");
  EXPECT_EQ(chosen(all, "lo"), "lo 127.0.0.1");
  EXPECT_EQ(chosen(all, "=eth10"), "eth10 10.9.9.9");
  EXPECT_EQ(chosen(all, "^eth,lo"), "ib0 192.168.0.7");
  EXPECT_EQ(chosen(all, "^=eth0,lo,ib0"), "eth10 10.9.9.9");
}

TEST(TcpInterfaces, Ipv4PreferredIpv6Supported) {
  std::vector<Interface> all = {at("eth0", "fd00::2"), at("eth0", "10.0.0.2"),
                                at("ib0", "fd00::7")};
  EXPECT_EQ(chosen(all, "eth"), "eth0 10.0.0.2");
  EXPECT_EQ(chosen(all, "ib"), "ib0 fd00::7");
  EXPECT_EQ(chosen(all, "eth", "AF_INET6"), "eth0 fd00::2");
  EXPECT_EQ(chosen(all, "ib", "AF_INET"),
            "error: tcp: no AF_INET interface matches TRNCCL_SOCKET_IFNAME=ib (up: eth0 fd00::2, "
            "eth0 10.0.0.2, ib0 fd00::7)");
}

TEST(TcpInterfaces, Errors) {
  std::vector<Interface> all = {at("lo", "127.0.0.1")};
  EXPECT_EQ(chosen(all, "eth"),
            "error: tcp: no interface matches TRNCCL_SOCKET_IFNAME=eth (up: lo 127.0.0.1)");
  EXPECT_EQ(chosen(all, "", "AF_UNIX"),
            "error: tcp: TRNCCL_SOCKET_FAMILY=AF_UNIX is neither AF_INET nor AF_INET6");
  EXPECT_EQ(chosen({}, ""), "error: tcp: no usable interface (up: none)");
}

// This machine's loopback is always there, and is what the other tests listen on.
TEST(TcpInterfaces, LocalLoopbackIsListed) {
  bool found = false;
  for (const Interface& i : localInterfaces()) {
    found |= i.name == "lo" && i.address == ip::make_address("127.0.0.1");
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace trnccl::transport::tcp
