// Addresses as trnccl shows and reads them: "127.0.0.1:41234" and "[::1]:41234", both for the
// bootstrap (TRNCCL_COMM_ID, the root's address) and the tcp transport (log lines, errors).
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <string>
#include <utility>

#include "common/status.h"

namespace trnccl::transport::net {

// "address:port", IPv6 addresses in brackets.
std::string nameOf(const boost::asio::ip::tcp::endpoint& endpoint);
// The peer's address of a connected socket, or "unknown address".
std::string remoteName(const boost::asio::ip::tcp::socket& socket);

// Splits "host:port" or "[v6addr]:port" (port 1..65535, host at most 255 characters). Never
// resolves a name. The messages quote `text`; the caller says where it came from.
Result<std::pair<std::string, uint16_t>> parseHostPort(const std::string& text);

// `host` if it is a numeric address, else the first address a name lookup gives for it
// (IPv4 preferred).
Result<std::string> resolveHost(const std::string& host);

}  // namespace trnccl::transport::net
