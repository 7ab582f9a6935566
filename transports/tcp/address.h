// Endpoints of the TCP transport: as published at setup (wire.h ListenAddress) and as shown
// in messages ("127.0.0.1:41234", "[::1]:41234").
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <string>

#include "transports/tcp/wire.h"

namespace trnccl::transport::tcp {

std::string nameOf(const boost::asio::ip::tcp::endpoint& endpoint);
// The peer's address of a connected socket, or "unknown address".
std::string remoteName(const boost::asio::ip::tcp::socket& socket);

boost::asio::ip::tcp::endpoint endpointOf(const ListenAddress& address);
// Fills family, port, scopeId and bytes of `out`.
void publish(const boost::asio::ip::tcp::endpoint& endpoint, ListenAddress& out);

}  // namespace trnccl::transport::tcp
