#include "transports/net/interfaces.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <cstring>
#include <memory>
#include <optional>

#include "common/env.h"

namespace trnccl::transport::net {
namespace {

namespace ip = boost::asio::ip;

std::optional<ip::address> toAddress(const sockaddr* sa) {
  if (sa->sa_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(sa);
    ip::address_v4::bytes_type bytes;
    std::memcpy(bytes.data(), &v4->sin_addr, bytes.size());
    return ip::address(ip::address_v4(bytes));
  }
  if (sa->sa_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(sa);
    if (IN6_IS_ADDR_LINKLOCAL(&v6->sin6_addr)) return std::nullopt;
    ip::address_v6::bytes_type bytes;
    std::memcpy(bytes.data(), &v6->sin6_addr, bytes.size());
    return ip::address(ip::address_v6(bytes));
  }
  return std::nullopt;
}

// The first IPv4 address among interfaces that `spec` selects, else the first IPv6 one.
std::optional<Interface> pick(const std::vector<Interface>& all, std::string_view family,
                              std::string_view spec) {
  const Interface* v6 = nullptr;
  for (const Interface& i : all) {
    if (!matchInterface(i.name, spec)) continue;
    if (i.address.is_v4() && family != "AF_INET6") return i;
    if (i.address.is_v6() && family != "AF_INET" && v6 == nullptr) v6 = &i;
  }
  if (v6 != nullptr) return *v6;
  return std::nullopt;
}

std::string names(const std::vector<Interface>& all) {
  std::string out;
  for (const Interface& i : all) {
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", i.name, i.address.to_string());
  }
  return out.empty() ? "none" : out;
}

}  // namespace

std::vector<Interface> localInterfaces() {
  std::vector<Interface> out;
  ifaddrs* raw = nullptr;
  if (::getifaddrs(&raw) != 0) return out;
  std::unique_ptr<ifaddrs, decltype(&::freeifaddrs)> list(raw, ::freeifaddrs);
  for (const ifaddrs* ifa = list.get(); ifa != nullptr; ifa = ifa->ifa_next) {
    if (ifa->ifa_addr == nullptr || (ifa->ifa_flags & IFF_UP) == 0) continue;
    if (std::optional<ip::address> address = toAddress(ifa->ifa_addr)) {
      out.push_back({ifa->ifa_name, *address});
    }
  }
  return out;
}

bool matchInterface(std::string_view name, std::string_view spec) {
  bool exclude = !spec.empty() && spec.front() == '^';
  if (exclude) spec.remove_prefix(1);
  bool exact = !spec.empty() && spec.front() == '=';
  if (exact) spec.remove_prefix(1);
  while (!spec.empty()) {
    size_t comma = spec.find(',');
    std::string_view token = spec.substr(0, comma);
    if (!token.empty() && (exact ? name == token : name.substr(0, token.size()) == token)) {
      return !exclude;
    }
    if (comma == std::string_view::npos) break;
    spec.remove_prefix(comma + 1);
  }
  return exclude;
}

Result<Interface> selectInterface(const std::vector<Interface>& all, std::string_view spec,
                                  std::string_view family) {
  if (!family.empty() && family != "AF_INET" && family != "AF_INET6") {
    return invalidArgument("net: TRNCCL_SOCKET_FAMILY={} is neither AF_INET nor AF_INET6", family);
  }
  std::string only = family.empty() ? "" : fmt::format("{} ", family);
  if (!spec.empty()) {
    if (auto chosen = pick(all, family, spec)) return *chosen;
    return invalidArgument("net: no {}interface matches TRNCCL_SOCKET_IFNAME={} (up: {})", only,
                           spec, names(all));
  }
  // As NCCL: loopback and docker bridges only when nothing else is up.
  for (std::string_view fallback : {"^docker,lo", "docker", "lo"}) {
    if (auto chosen = pick(all, family, fallback)) return *chosen;
  }
  return invalidArgument("net: no usable {}interface (up: {})", only, names(all));
}

Result<Interface> chooseInterface() {
  return selectInterface(localInterfaces(), env::getString("TRNCCL_SOCKET_IFNAME", ""),
                         env::getString("TRNCCL_SOCKET_FAMILY", ""));
}

}  // namespace trnccl::transport::net
