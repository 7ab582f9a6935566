// Fuzz target: selectInterface, the one rule by which the bootstrap root and the tcp transport
// choose their interface (transports/net/interfaces.h). Input lines: the TRNCCL_SOCKET_IFNAME
// spec, a TRNCCL_SOCKET_FAMILY ("", "AF_INET", "AF_INET6" or anything else), then one
// "name address" per interface (lines whose address does not parse are skipped).
// Properties: a choice is one of the interfaces, of the family asked for, selected by the spec
// or, with no spec, of the best tier there is (anything, then docker*, then lo); it is IPv6
// only when its tier has no IPv4 address. An error means no interface qualifies.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "transports/net/interfaces.h"

using namespace trnccl::transport::net;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  std::string spec, family, line;
  std::getline(in, spec);
  std::getline(in, family);
  std::vector<Interface> all;
  while (std::getline(in, line) && all.size() < 64) {
    size_t space = line.find(' ');
    if (space == std::string::npos) continue;
    boost::system::error_code ec;
    auto address = boost::asio::ip::make_address(line.substr(space + 1), ec);
    if (!ec) all.push_back({line.substr(0, space), address});
  }
  bool familyOk = family.empty() || family == "AF_INET" || family == "AF_INET6";
  auto allowed = [&](const Interface& i) {
    if (!family.empty() && (family == "AF_INET") != i.address.is_v4()) return false;
    return spec.empty() || matchInterface(i.name, spec);
  };
  // With no spec: 0 for ordinary interfaces, 1 for docker*, 2 for lo; one tier with a spec.
  auto tier = [&](const Interface& i) {
    if (!spec.empty()) return 0;
    return matchInterface(i.name, "docker") ? 1 : matchInterface(i.name, "lo") ? 2 : 0;
  };
  int best = 3;
  for (const Interface& i : all) {
    if (allowed(i)) best = std::min(best, tier(i));
  }

  auto chosen = selectInterface(all, spec, family);
  if (!chosen) {
    if (familyOk && best < 3) std::abort();
    return 0;
  }
  if (!familyOk || !allowed(*chosen) || tier(*chosen) != best) std::abort();
  bool listed = false;
  bool v4InTier = false;
  for (const Interface& i : all) {
    listed = listed || (i.name == chosen->name && i.address == chosen->address);
    v4InTier = v4InTier || (allowed(i) && tier(i) == best && i.address.is_v4());
  }
  if (!listed || (chosen->address.is_v6() && v4InTier)) std::abort();
  return 0;
}
