// UniqueId encoding, address parsing, and creation of ids (with or without TRNCCL_COMM_ID).
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstring>
#include <random>

#include "bootstrap/bootstrap.h"
#include "bootstrap/bootstrap_root.h"
#include "bootstrap/bootstrap_wire.h"
#include "bootstrap/socket.h"
#include "common/env.h"
#include "common/log.h"

namespace trnccl::bootstrap {
namespace {

// Layout of the 128 bytes (little-endian):
//   0 u32 kIdMarker | 4 u16 kIdVersion | 6 u8 flags | 7 u8 host length | 8 u64 magic
//   16 u16 port | 18 host (kMaxHost bytes) | ... zero ... | 120 u64 FNV-1a of bytes [0, 120)
// The checksum makes decode of random or truncated bytes fail instead of yielding an address.
constexpr uint32_t kIdMarker = 0x44494e54;  // "TNID"
constexpr uint16_t kIdVersion = 1;
constexpr size_t kMaxHost = 64;
constexpr size_t kChecksumAt = 120;
constexpr uint8_t kFlagFromEnv = 1;

uint64_t fnv1a(const void* data, size_t bytes) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < bytes; ++i) {
    hash ^= static_cast<const unsigned char*>(data)[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

uint64_t randomMagic() {
  std::random_device rd;
  uint64_t magic = 0;
  while (magic == 0) magic = (static_cast<uint64_t>(rd()) << 32) | rd();
  return magic;
}

// Name resolution happens here (never in parseHostPort); prefers IPv4 like the rest.
Result<std::string> resolveHost(const std::string& host) {
  boost::system::error_code ec;
  asio::ip::make_address(host, ec);
  if (!ec) return host;
  asio::io_context io;
  tcp::resolver resolver(io);
  auto results = resolver.resolve(host, "", ec);
  if (ec || results.empty()) {
    return invalidArgument("bootstrap: cannot resolve host '{}': {}", host, ec.message());
  }
  for (const auto& entry : results) {
    if (entry.endpoint().address().is_v4()) return entry.endpoint().address().to_string();
  }
  return results.begin()->endpoint().address().to_string();
}

}  // namespace

void UniqueId::encode(char out[128]) const {
  std::byte buf[128] = {};
  size_t hostLen = std::min(host.size(), kMaxHost);
  bytes::put<uint32_t>(buf + 0, kIdMarker);
  bytes::put<uint16_t>(buf + 4, kIdVersion);
  buf[6] = static_cast<std::byte>(fromEnv ? kFlagFromEnv : 0);
  buf[7] = static_cast<std::byte>(hostLen);
  wire::putU64(buf + 8, magic);
  bytes::put<uint16_t>(buf + 16, port);
  std::memcpy(buf + 18, host.data(), hostLen);
  wire::putU64(buf + kChecksumAt, fnv1a(buf, kChecksumAt));
  std::memcpy(out, buf, sizeof(buf));
}

Result<UniqueId> UniqueId::decode(const char in[128]) {
  std::byte buf[128];
  std::memcpy(buf, in, sizeof(buf));
  if (bytes::get<uint32_t>(buf + 0) != kIdMarker) {
    return invalidArgument("bootstrap: unique id is not valid (no trnccl marker)");
  }
  uint16_t version = bytes::get<uint16_t>(buf + 4);
  if (version != kIdVersion) {
    return invalidArgument("bootstrap: unique id has format version {}, expected {}", version,
                           kIdVersion);
  }
  if (wire::getU64(buf + kChecksumAt) != fnv1a(buf, kChecksumAt)) {
    return invalidArgument("bootstrap: unique id is corrupt (checksum mismatch)");
  }
  UniqueId id;
  size_t hostLen = static_cast<size_t>(buf[7]);
  id.fromEnv = (static_cast<uint8_t>(buf[6]) & kFlagFromEnv) != 0;
  id.magic = wire::getU64(buf + 8);
  id.port = bytes::get<uint16_t>(buf + 16);
  if (hostLen == 0 || hostLen > kMaxHost || id.port == 0) {
    return invalidArgument("bootstrap: unique id is not valid (host length {}, port {})", hostLen,
                           id.port);
  }
  id.host.assign(reinterpret_cast<const char*>(buf + 18), hostLen);
  boost::system::error_code ec;
  asio::ip::make_address(id.host, ec);
  if (ec) return invalidArgument("bootstrap: unique id holds a non-numeric host '{}'", id.host);
  return id;
}

Result<std::pair<std::string, uint16_t>> parseHostPort(const std::string& text) {
  std::string host;
  std::string portText;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos) return invalidArgument("bootstrap: '{}': missing ']'", text);
    host = text.substr(1, close - 1);
    if (close + 1 >= text.size() || text[close + 1] != ':') {
      return invalidArgument("bootstrap: '{}': expected ':port' after ']'", text);
    }
    portText = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string::npos) {
      return invalidArgument("bootstrap: '{}': expected host:port", text);
    }
    host = text.substr(0, colon);
    portText = text.substr(colon + 1);
    if (host.find(':') != std::string::npos) {
      return invalidArgument("bootstrap: '{}': write IPv6 addresses as [addr]:port", text);
    }
  }
  if (host.empty()) return invalidArgument("bootstrap: '{}': empty host", text);
  if (host.size() > 255)
    return invalidArgument("bootstrap: host of {} chars is too long", host.size());
  bool digits = !portText.empty() && portText.size() <= 5 &&
                portText.find_first_not_of("0123456789") == std::string::npos;
  long port = digits ? std::stol(portText) : 0;
  if (port < 1 || port > 65535) {
    return invalidArgument("bootstrap: '{}': port '{}' is not in 1..65535", text, portText);
  }
  return std::make_pair(host, static_cast<uint16_t>(port));
}

Result<UniqueId> createUniqueId(bool useCommIdEnv) {
  std::string commId = useCommIdEnv ? env::getString("TRNCCL_COMM_ID", "") : "";
  if (!commId.empty()) {
    auto hostPort = parseHostPort(commId);
    if (!hostPort) {
      return invalidArgument("TRNCCL_COMM_ID: {}", hostPort.status().message());
    }
    auto host = resolveHost(hostPort->first);
    if (!host) return host.status();
    // Every process computes the same id from the same string; no root is started here.
    return UniqueId{.magic = fnv1a(commId.data(), commId.size()),
                    .host = *host,
                    .port = hostPort->second,
                    .fromEnv = true};
  }
  auto host = chooseBootstrapHost();
  if (!host) return host.status();
  uint64_t magic = randomMagic();
  auto port = startRoot(*host, 0, magic);
  if (!port) return port.status();
  return UniqueId{.magic = magic, .host = *host, .port = *port, .fromEnv = false};
}

Status ensureRoot(const UniqueId& id) {
  if (id.port == 0 || id.host.empty()) {
    return invalidArgument("bootstrap: ensureRoot needs an id with an address");
  }
  auto port = startRoot(id.host, id.port, id.magic);
  return port ? Status::ok() : port.status();
}

}  // namespace trnccl::bootstrap
