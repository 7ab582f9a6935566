// Fuzz target: matchInterface (TRNCCL_SOCKET_IFNAME, NCCL's syntax; transports/net, used by the
// bootstrap and the tcp transport). Input: name '\n' spec.
// Invariant: "^" + spec selects exactly the names spec does not (spec not starting with '^').
#include <cstdint>
#include <cstdlib>
#include <string>

#include "transports/net/interfaces.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  size_t nl = text.find('\n');
  std::string name = text.substr(0, nl);
  std::string spec = nl == std::string::npos ? "" : text.substr(nl + 1);
  bool match = trnccl::transport::net::matchInterface(name, spec);
  if (!spec.empty() && spec.front() != '^') {
    bool excluded = trnccl::transport::net::matchInterface(name, "^" + spec);
    if (excluded == match) std::abort();
  }
  return 0;
}
