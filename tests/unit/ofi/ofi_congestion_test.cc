// The congestion control of libfabric's TCP connections (transports/ofi/sockets.h): once a pair
// has exchanged a message, the provider's sockets between the two data endpoints read back the
// congestion control of the rule the tcp transport uses (transports/core/congestion.h: reno on
// this host unless TRNCCL_SOCKET_CONGESTION says otherwise), `default` leaves them alone, and no
// other socket (the heartbeat endpoints') is touched. Both ranks are threads of this process, so
// its descriptors hold both ends of each connection.
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "transports/core/congestion.h"
#include "transports/ofi/heartbeat.h"
#include "transports/ofi/ofi_connection.h"
#include "transports/ofi/testing.h"
#include "unit/ofi/ofi_test_util.h"

namespace trnccl::transport::ofi::test {
namespace {

using testing::Event;

// The port of an endpoint name that is an IPv4 or IPv6 socket address, else 0.
uint16_t portOf(const std::vector<std::byte>& name) {
  sockaddr_storage address{};
  if (name.size() < sizeof(sockaddr_in) || name.size() > sizeof(address)) return 0;
  std::memcpy(&address, name.data(), name.size());
  if (address.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in&>(address).sin_port);
  if (address.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<sockaddr_in6&>(address).sin6_port);
  }
  return 0;
}

uint16_t portOf(const sockaddr_storage& address) {
  return ntohs(address.ss_family == AF_INET6
                   ? reinterpret_cast<const sockaddr_in6&>(address).sin6_port
                   : reinterpret_cast<const sockaddr_in&>(address).sin_port);
}

// The congestion control of each connected TCP socket of this process with `port` at either
// end (so both ends of a connection to a listener on it, or from it).
std::vector<std::string> congestionAtPort(uint16_t port) {
  std::vector<std::string> found;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return found;
  while (const dirent* entry = ::readdir(dir)) {
    const int fd = std::atoi(entry->d_name);
    struct stat st {};
    if (entry->d_name[0] == '.' || ::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    sockaddr_storage local{}, remote{};
    socklen_t localBytes = sizeof(local), remoteBytes = sizeof(remote);
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &localBytes) != 0 ||
        ::getpeername(fd, reinterpret_cast<sockaddr*>(&remote), &remoteBytes) != 0 ||
        (local.ss_family != AF_INET && local.ss_family != AF_INET6)) {
      continue;
    }
    if (portOf(local) == port || portOf(remote) == port) found.push_back(congestionOf(fd));
  }
  ::closedir(dir);
  return found;
}

std::string systemDefault() {
  std::ifstream file("/proc/sys/net/ipv4/tcp_congestion_control");
  std::string name;
  file >> name;
  return name;
}

class OfiCongestion : public PerProvider {
 protected:
  // Connects a pair and exchanges a message of a data piece each way (so sends complete too);
  // the congestion control of the sockets of each rank's data and heartbeat endpoints.
  void exchange() {
    Cluster cluster(2);
    ASSERT_TRUE(cluster.connect([](int r) { return std::vector<int>{1 - r}; }).isOk());
    Status status = cluster.runEach([&](int r) -> Status {
      return exchangeStep(cluster.bell(r), r, 0, size_t{1} << 20, cluster.links(r));
    });
    ASSERT_TRUE(status.isOk()) << status.message();
    for (int r = 0; r < 2; ++r) {
      Endpoint& endpoint = static_cast<OfiConnection*>(cluster.connTo(r, 1 - r))->endpoint();
      Result<std::vector<std::byte>> name = endpoint.name();
      ASSERT_TRUE(name.isOk());
      ASSERT_NE(portOf(*name), 0) << "not a socket address: not a TCP provider";
      for (const std::string& cc : congestionAtPort(portOf(*name))) data_.push_back(cc);
      ASSERT_NE(endpoint.heartbeats(), nullptr);
      Result<std::vector<std::byte>> beat = endpoint.heartbeats()->name();
      ASSERT_TRUE(beat.isOk());
      for (const std::string& cc : congestionAtPort(portOf(*beat))) beats_.push_back(cc);
    }
  }

  std::vector<std::string> data_;   // both ends of the data endpoints' connections
  std::vector<std::string> beats_;  // and of the heartbeat endpoints'
};

TEST_P(OfiCongestion, SameHostConnectionsTakeReno) {
  if (std::getenv("TRNCCL_SOCKET_CONGESTION") != nullptr) {
    GTEST_SKIP() << "TRNCCL_SOCKET_CONGESTION is set";
  }
  CounterDelta<Event> delta;
  exchange();
  // One connection at least, both of its ends in this process.
  ASSERT_GE(data_.size(), 2u);
  for (const std::string& cc : data_) EXPECT_EQ(cc, "reno");
  EXPECT_EQ(delta.get(Event::kCongestionSet), static_cast<int64_t>(data_.size()));
  // The heartbeats' connections are not the data endpoint's: left alone.
  for (const std::string& cc : beats_) EXPECT_EQ(cc, systemDefault());
}

TEST_P(OfiCongestion, DefaultLeavesThemAlone) {
  EnvGuard env("TRNCCL_SOCKET_CONGESTION", "default");
  CounterDelta<Event> delta;
  exchange();
  ASSERT_GE(data_.size(), 2u);
  for (const std::string& cc : data_) EXPECT_EQ(cc, systemDefault());
  EXPECT_EQ(delta.get(Event::kCongestionSet), 0);
}

// A name applies whatever the system's default is (reno differs from it here: bbr).
TEST_P(OfiCongestion, ANamedOneAppliesToEveryConnection) {
  const std::string other = systemDefault() == "reno" ? "cubic" : "reno";
  EnvGuard env("TRNCCL_SOCKET_CONGESTION", other.c_str());
  exchange();
  ASSERT_GE(data_.size(), 2u);
  for (const std::string& cc : data_) EXPECT_EQ(cc, other);
}

// libfabric's TCP providers: tcp;ofi_rxm ("tcp" on 1.17) and the native one ("net").
INSTANTIATE_TEST_SUITE_P(Providers, OfiCongestion, ::testing::Values("tcp", "net"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace trnccl::transport::ofi::test
