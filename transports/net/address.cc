#include "transports/net/address.h"

#include <fmt/format.h>

#include <boost/asio/io_context.hpp>

namespace trnccl::transport::net {

namespace asio = boost::asio;
using asio::ip::tcp;

std::string nameOf(const tcp::endpoint& endpoint) {
  if (endpoint.address().is_v6()) {
    return fmt::format("[{}]:{}", endpoint.address().to_string(), endpoint.port());
  }
  return fmt::format("{}:{}", endpoint.address().to_string(), endpoint.port());
}

std::string remoteName(const tcp::socket& socket) {
  boost::system::error_code ec;
  tcp::endpoint endpoint = socket.remote_endpoint(ec);
  return ec ? std::string("unknown address") : nameOf(endpoint);
}

Result<std::pair<std::string, uint16_t>> parseHostPort(const std::string& text) {
  std::string host;
  std::string portText;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos) return invalidArgument("'{}': missing ']'", text);
    host = text.substr(1, close - 1);
    if (close + 1 >= text.size() || text[close + 1] != ':') {
      return invalidArgument("'{}': expected ':port' after ']'", text);
    }
    portText = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string::npos) return invalidArgument("'{}': expected host:port", text);
    host = text.substr(0, colon);
    portText = text.substr(colon + 1);
    if (host.find(':') != std::string::npos) {
      return invalidArgument("'{}': write IPv6 addresses as [addr]:port", text);
    }
  }
  if (host.empty()) return invalidArgument("'{}': empty host", text);
  if (host.size() > 255) return invalidArgument("host of {} chars is too long", host.size());
  bool digits = !portText.empty() && portText.size() <= 5 &&
                portText.find_first_not_of("0123456789") == std::string::npos;
  long port = digits ? std::stol(portText) : 0;
  if (port < 1 || port > 65535) {
    return invalidArgument("'{}': port '{}' is not in 1..65535", text, portText);
  }
  return std::make_pair(host, static_cast<uint16_t>(port));
}

Result<std::string> resolveHost(const std::string& host) {
  boost::system::error_code ec;
  asio::ip::make_address(host, ec);
  if (!ec) return host;
  asio::io_context io;
  tcp::resolver resolver(io);
  auto results = resolver.resolve(host, "", ec);
  if (ec || results.empty()) {
    return invalidArgument("cannot resolve host '{}': {}", host, ec.message());
  }
  for (const auto& entry : results) {
    if (entry.endpoint().address().is_v4()) return entry.endpoint().address().to_string();
  }
  return results.begin()->endpoint().address().to_string();
}

}  // namespace trnccl::transport::net
