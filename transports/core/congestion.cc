#include "transports/core/congestion.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/log.h"

namespace trnccl::transport {
namespace {

constexpr const char* kSameHostCongestion = "reno";
constexpr size_t kNameBytes = 16;  // the kernel's TCP_CA_NAME_MAX

bool isLoopback(const sockaddr_storage& address) {
  if (address.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(address);
    return (ntohl(v4.sin_addr.s_addr) >> 24) == 127;
  }
  if (address.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(address);
    return IN6_IS_ADDR_LOOPBACK(&v6.sin6_addr);
  }
  return false;
}

// The addresses alone (not the ports) are equal.
bool sameAddress(const sockaddr_storage& a, const sockaddr_storage& b) {
  if (a.ss_family != b.ss_family) return false;
  if (a.ss_family == AF_INET) {
    return reinterpret_cast<const sockaddr_in&>(a).sin_addr.s_addr ==
           reinterpret_cast<const sockaddr_in&>(b).sin_addr.s_addr;
  }
  if (a.ss_family == AF_INET6) {
    const auto& x = reinterpret_cast<const sockaddr_in6&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in6&>(b);
    return IN6_ARE_ADDR_EQUAL(&x.sin6_addr, &y.sin6_addr) && x.sin6_scope_id == y.sin6_scope_id;
  }
  return false;
}

}  // namespace

std::string congestionControl(const char* setting, bool sameHost) {
  if (setting == nullptr) return sameHost ? kSameHostCongestion : "";
  const std::string name = setting;
  return name == "default" ? "" : name;
}

const char* congestionSetting() { return std::getenv("TRNCCL_SOCKET_CONGESTION"); }

bool sameHostSocket(int fd) {
  sockaddr_storage local{}, remote{};
  socklen_t localBytes = sizeof(local), remoteBytes = sizeof(remote);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &localBytes) != 0 ||
      ::getpeername(fd, reinterpret_cast<sockaddr*>(&remote), &remoteBytes) != 0) {
    return false;
  }
  return isLoopback(remote) || sameAddress(remote, local);
}

bool setCongestion(int fd, const std::string& name, const char* who, int rank) {
  if (::setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name.data(),
                   static_cast<socklen_t>(name.size())) == 0) {
    return true;
  }
  const int err = errno;
  static std::atomic<bool> warned{false};  // once per process, not per socket
  if (warned.exchange(true)) return false;
  TRN_WARN(kNet, "{}: rank {}: congestion control \"{}\" refused ({}); keeping the system's", who,
           rank, name, std::strerror(err));
  return false;
}

std::string congestionOf(int fd) {
  char name[kNameBytes] = {};
  socklen_t bytes = sizeof(name);
  if (::getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &bytes) != 0) return "";
  return std::string(name, strnlen(name, bytes));
}

}  // namespace trnccl::transport
