#include "transports/ofi/sockets.h"

#include <dirent.h>
#include <netinet/in.h>
#include <rdma/fabric.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include "transports/core/congestion.h"
#include "transports/ofi/testing.h"

namespace trnccl::transport::ofi {
namespace {

// A provider's name as a socket address, when it is one (FI_SOCKADDR*: the TCP providers).
std::optional<sockaddr_storage> socketAddress(uint32_t format, std::span<const std::byte> name) {
  if (format != FI_SOCKADDR && format != FI_SOCKADDR_IN && format != FI_SOCKADDR_IN6) {
    return std::nullopt;
  }
  sockaddr_storage address{};
  if (name.size() < sizeof(sa_family_t) || name.size() > sizeof(address)) return std::nullopt;
  std::memcpy(&address, name.data(), name.size());
  if (address.ss_family == AF_INET && name.size() >= sizeof(sockaddr_in)) return address;
  if (address.ss_family == AF_INET6 && name.size() >= sizeof(sockaddr_in6)) return address;
  return std::nullopt;
}

// `actual` is the address `name` names: same family and port, and the same address unless the
// name's is the wildcard (a provider bound to every interface).
bool named(const sockaddr_storage& actual, const sockaddr_storage& name) {
  if (actual.ss_family != name.ss_family) return false;
  if (name.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(actual);
    const auto& n = reinterpret_cast<const sockaddr_in&>(name);
    return a.sin_port == n.sin_port &&
           (n.sin_addr.s_addr == htonl(INADDR_ANY) || a.sin_addr.s_addr == n.sin_addr.s_addr);
  }
  const auto& a = reinterpret_cast<const sockaddr_in6&>(actual);
  const auto& n = reinterpret_cast<const sockaddr_in6&>(name);
  return a.sin6_port == n.sin6_port &&
         (IN6_IS_ADDR_UNSPECIFIED(&n.sin6_addr) || IN6_ARE_ADDR_EQUAL(&a.sin6_addr, &n.sin6_addr));
}

// A connected TCP socket's two addresses; false for any other descriptor.
bool connectedTcp(int fd, sockaddr_storage& local, sockaddr_storage& remote) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
  int protocol = 0;
  socklen_t bytes = sizeof(protocol);
  if (::getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &bytes) != 0 ||
      protocol != IPPROTO_TCP) {
    return false;
  }
  socklen_t localBytes = sizeof(local), remoteBytes = sizeof(remote);
  return ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &localBytes) == 0 &&
         ::getpeername(fd, reinterpret_cast<sockaddr*>(&remote), &remoteBytes) == 0;
}

}  // namespace

ProviderSockets::ProviderSockets(uint32_t addrFormat, std::span<const std::byte> self)
    : setting_(congestionSetting()) {
  std::optional<sockaddr_storage> address = socketAddress(addrFormat, self);
  const bool anyName =
      !congestionControl(setting_, true).empty() || !congestionControl(setting_, false).empty();
  active_ = address.has_value() && anyName;
  if (address) self_ = *address;
}

void ProviderSockets::addPeer(std::span<const std::byte> name) {
  // The peer's endpoint has our endpoint's provider, hence its address format.
  std::optional<sockaddr_storage> address = socketAddress(FI_SOCKADDR, name);
  if (address) peers_.push_back(*address);
}

bool ProviderSockets::matches(const sockaddr_storage& local, const sockaddr_storage& remote) const {
  return named(local, self_) || std::any_of(peers_.begin(), peers_.end(),
                                            [&](const auto& peer) { return named(remote, peer); });
}

int ProviderSockets::apply(int rank) const {
  if (!active_) return 0;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return 0;
  const int own = ::dirfd(dir);
  int set = 0;
  while (const dirent* entry = ::readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == own) continue;
    sockaddr_storage local{}, remote{};
    if (!connectedTcp(static_cast<int>(fd), local, remote) || !matches(local, remote)) continue;
    const std::string name = congestionControl(setting_, sameHostSocket(static_cast<int>(fd)));
    if (!name.empty() && setCongestion(static_cast<int>(fd), name, "ofi", rank)) {
      testing::counters().add(testing::Event::kCongestionSet);
      ++set;
    }
  }
  ::closedir(dir);
  return set;
}

}  // namespace trnccl::transport::ofi
