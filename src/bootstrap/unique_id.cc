// UniqueId encoding, and creation of ids (with or without TRNCCL_COMM_ID).
#include <boost/asio/ip/address.hpp>
#include <cstring>
#include <random>

#include "bootstrap/bootstrap.h"
#include "bootstrap/bootstrap_root.h"
#include "bootstrap/bootstrap_wire.h"
#include "bootstrap/socket.h"
#include "common/env.h"
#include "common/log.h"
#include "transports/net/address.h"

namespace trnccl::bootstrap {
namespace {

namespace net = transport::net;

// Layout of the 128 bytes (little-endian):
//   0 u32 kIdMarker | 4 u16 kIdVersion | 6 u8 flags | 7 u8 host length | 8 u64 magic
//   16 u16 port | 18 host (kMaxHost bytes) | 82 u8 interface length | 83 interface name
//   (kMaxInterface bytes) | ... zero ... | 120 u64 FNV-1a of bytes [0, 120)
// The checksum makes decode of random or truncated bytes fail instead of yielding an address.
// Ids without an interface (older ones included) have length 0 there.
constexpr uint32_t kIdMarker = 0x44494e54;  // "TNID"
constexpr uint16_t kIdVersion = 1;
constexpr size_t kMaxHost = 64;
constexpr size_t kInterfaceAt = 82;
constexpr size_t kMaxInterface = 15;  // IFNAMSIZ - 1
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
  size_t ifLen = std::min(interface.size(), kMaxInterface);
  buf[kInterfaceAt] = static_cast<std::byte>(ifLen);
  std::memcpy(buf + kInterfaceAt + 1, interface.data(), ifLen);
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
  size_t ifLen = static_cast<size_t>(buf[kInterfaceAt]);
  if (ifLen > kMaxInterface) {
    return invalidArgument("bootstrap: unique id is not valid (interface name of {} bytes)", ifLen);
  }
  id.interface.assign(reinterpret_cast<const char*>(buf + kInterfaceAt + 1), ifLen);
  for (char c : id.interface) {
    if (c <= ' ' || c > '~')
      return invalidArgument("bootstrap: unique id has a bad interface name");
  }
  boost::system::error_code ec;
  asio::ip::make_address(id.host, ec);
  if (ec) return invalidArgument("bootstrap: unique id holds a non-numeric host '{}'", id.host);
  return id;
}

Result<UniqueId> createUniqueId(bool useCommIdEnv) {
  std::string commId = useCommIdEnv ? env::getString("TRNCCL_COMM_ID", "") : "";
  if (!commId.empty()) {
    auto hostPort = net::parseHostPort(commId);
    if (!hostPort) {
      return invalidArgument("bootstrap: TRNCCL_COMM_ID: {}", hostPort.status().message());
    }
    auto host = net::resolveHost(hostPort->first);
    if (!host) return invalidArgument("bootstrap: TRNCCL_COMM_ID: {}", host.status().message());
    // Every process computes the same id from the same string; no root is started here.
    return UniqueId{.magic = fnv1a(commId.data(), commId.size()),
                    .host = *host,
                    .port = hostPort->second,
                    .fromEnv = true,
                    .interface = ""};
  }
  auto host = chooseBootstrapHost();
  if (!host) return host.status();
  uint64_t magic = randomMagic();
  // Port 0: the kernel assigns a free one, published through the id, so concurrent jobs on
  // one host never collide (a fixed port can be taken: TRNCCL_COMM_ID, ensureRoot()).
  auto port = startRoot(host->address, 0, magic);
  if (!port) return port.status();
  return UniqueId{.magic = magic,
                  .host = host->address,
                  .port = *port,
                  .fromEnv = false,
                  .interface = host->interface};
}

Status ensureRoot(const UniqueId& id) {
  if (id.port == 0 || id.host.empty()) {
    return invalidArgument("bootstrap: ensureRoot needs an id with an address");
  }
  auto port = startRoot(id.host, id.port, id.magic);
  if (port) return Status::ok();
  // A fixed port may be taken by another process: another job, a left-over server.
  return Status(port.status().code(),
                fmt::format("{} (the port of TRNCCL_COMM_ID; choose a free one, or leave "
                            "TRNCCL_COMM_ID unset for a port the kernel assigns)",
                            port.status().message()));
}

}  // namespace trnccl::bootstrap
