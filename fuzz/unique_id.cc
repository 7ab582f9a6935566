// Fuzz target: UniqueId::decode of 128 untrusted bytes (a trncclUniqueId travels out of band,
// through files and stores). A decoded id must encode back to bytes that decode equal.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "bootstrap/bootstrap.h"

using trnccl::bootstrap::UniqueId;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  char in[128] = {};
  std::memcpy(in, data, size < sizeof(in) ? size : sizeof(in));
  auto id = UniqueId::decode(in);
  if (!id) return 0;
  if (id->host.empty() || id->host.size() > 64 || id->port == 0 || id->interface.size() > 15) {
    std::abort();
  }
  char again[128];
  id->encode(again);
  auto back = UniqueId::decode(again);
  if (!back || back->host != id->host || back->port != id->port || back->magic != id->magic ||
      back->fromEnv != id->fromEnv || back->interface != id->interface) {
    std::abort();
  }
  return 0;
}
