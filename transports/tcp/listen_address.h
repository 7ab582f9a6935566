// Listener endpoints of the TCP transport as published at setup (wire.h ListenAddress); how
// addresses are shown is transports/net/address.h.
#pragma once

#include <boost/asio/ip/tcp.hpp>

#include "transports/tcp/wire.h"

namespace trnccl::transport::tcp {

boost::asio::ip::tcp::endpoint endpointOf(const ListenAddress& address);
// Fills family, port, scopeId and bytes of `out`.
void publish(const boost::asio::ip::tcp::endpoint& endpoint, ListenAddress& out);

}  // namespace trnccl::transport::tcp
