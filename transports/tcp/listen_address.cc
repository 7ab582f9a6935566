#include "transports/tcp/listen_address.h"

#include <algorithm>
#include <cstring>

namespace trnccl::transport::tcp {

namespace asio = boost::asio;
using asio::ip::tcp;

tcp::endpoint endpointOf(const ListenAddress& address) {
  if (address.family == 6) {
    asio::ip::address_v6::bytes_type bytes;
    std::memcpy(bytes.data(), address.bytes.data(), bytes.size());
    return {asio::ip::address_v6(bytes, address.scopeId), address.port};
  }
  asio::ip::address_v4::bytes_type bytes;
  std::memcpy(bytes.data(), address.bytes.data(), bytes.size());
  return {asio::ip::address_v4(bytes), address.port};
}

void publish(const tcp::endpoint& endpoint, ListenAddress& out) {
  out.port = endpoint.port();
  out.bytes.fill(0);
  if (endpoint.address().is_v6()) {
    out.family = 6;
    out.scopeId = endpoint.address().to_v6().scope_id();
    auto bytes = endpoint.address().to_v6().to_bytes();
    std::copy(bytes.begin(), bytes.end(), out.bytes.begin());
  } else {
    out.family = 4;
    auto bytes = endpoint.address().to_v4().to_bytes();
    std::copy(bytes.begin(), bytes.end(), out.bytes.begin());
  }
}

}  // namespace trnccl::transport::tcp
