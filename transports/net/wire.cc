#include "transports/net/wire.h"

#include <fmt/format.h>

namespace trnccl::transport::net {

HeaderCheck checkHeader(const Protocol& protocol, const Preamble& got, uint64_t maxLength) {
  if (got.magic != protocol.magic) {
    return {HeaderVerdict::kForeign, fmt::format("not a {} peer: magic {:#x}, expected {:#x}",
                                                 protocol.name, got.magic, protocol.magic)};
  }
  if (got.version != protocol.version) {
    return {HeaderVerdict::kForeign, fmt::format("{} protocol version {}, this side speaks {}",
                                                 protocol.name, got.version, protocol.version)};
  }
  if (got.length > maxLength) {
    return {HeaderVerdict::kTooLong, fmt::format("{} header announces {} bytes, at most {} allowed",
                                                 protocol.name, got.length, maxLength)};
  }
  return {};
}

}  // namespace trnccl::transport::net
