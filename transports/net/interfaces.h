// Which local interface the bootstrap root and the tcp transport's listeners use: one rule,
// NCCL's (ncclFindInterfaces), for both.
//
// TRNCCL_SOCKET_IFNAME  comma-separated interface name prefixes ("eth,ib"); a leading '^'
//                       excludes them instead ("^docker,lo"); a leading '=' makes them exact
//                       names ("=eth0"; "^=" both). Unset: any interface but lo and docker*;
//                       docker*, then lo, only when nothing else is up.
// TRNCCL_SOCKET_FAMILY  AF_INET or AF_INET6 to allow only that family. Otherwise IPv4 is
//                       preferred and IPv6 taken when the selection has no IPv4 address.
// IPv6 link-local addresses are skipped: the scope they need is only meaningful on this host.
#pragma once

#include <boost/asio/ip/address.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace trnccl::transport::net {

struct Interface {
  std::string name;
  boost::asio::ip::address address;
};

// The addresses of interfaces that are up, in getifaddrs order.
std::vector<Interface> localInterfaces();

// Whether interface `name` is selected by `spec` in TRNCCL_SOCKET_IFNAME syntax.
bool matchInterface(std::string_view name, std::string_view spec);

// The interface to use among `all`, for an IFNAME `spec` ("" = unset) and a `family` of "",
// "AF_INET" or "AF_INET6". Pure, for tests and fuzzing.
Result<Interface> selectInterface(const std::vector<Interface>& all, std::string_view spec,
                                  std::string_view family);

// selectInterface over localInterfaces(), TRNCCL_SOCKET_IFNAME and TRNCCL_SOCKET_FAMILY.
Result<Interface> chooseInterface();

}  // namespace trnccl::transport::net
