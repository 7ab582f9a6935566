// Fuzz target: parseHostPort (TRNCCL_COMM_ID), cf. NVIDIA/nccl#2026 and PR #2250 (overflows in
// NCCL's host:port and [IPv6]:port parsing). A parsed address must print and parse back.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "transports/net/address.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto parsed = trnccl::transport::net::parseHostPort(text);
  if (!parsed) return 0;
  const auto& [host, port] = *parsed;
  if (host.empty() || host.size() > 255 || port == 0) std::abort();
  bool v6 = host.find(':') != std::string::npos;
  std::string again = (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
  auto back = trnccl::transport::net::parseHostPort(again);
  // Hosts with brackets inside cannot round-trip (and are not addresses); anything else must.
  bool brackets = host.find_first_of("[]") != std::string::npos;
  if (!brackets && (!back || back->first != host || back->second != port)) {
    std::abort();
  }
  return 0;
}
