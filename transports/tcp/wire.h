// What the TCP transport puts on the wire: fixed-size binary structs only, no lengths that size
// an allocation (reliability-anchors.md 3.4).
//
// Setup: every rank publishes a ListenAddress through the oob allGather. For each pair the
// lower rank connects `nsocks` data sockets and one control socket (socketIndex == nsocks) to
// the higher one; on each, the connector sends a Handshake and the acceptor, once it has
// validated it, answers with its own.
//
// Control: each end writes an 8-byte kHeartbeat every heartbeat interval of the pair
// (transports/core/liveness.h); nothing else ever travels there, so the reader checks every
// byte against the pattern.
//
// Data: a message of B bytes is cut into chunks of kChunkBytes (the last one shorter); chunk k
// travels on socket k % nsocks, preceded by a FrameHeader. Both sides derive the same layout
// from (B, nsocks), so the receiver knows which socket carries the next byte, and checks every
// header field against what beginRecv() posted before handing out a single payload byte.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "transports/net/wire.h"

namespace trnccl::transport::tcp {

inline constexpr uint64_t kHandshakeMagic = 0x31'70'63'74'63'63'6e'74ULL;  // "tncctcp1"
inline constexpr uint32_t kProtocolVersion = 2;                            // 2: the control socket
inline constexpr uint32_t kFrameMagic = 0x746e'6366;                       // "fcnt"
// Stripe unit: small enough that a quarter-buffer pipeline slice spans every socket, large
// enough that the 32-byte header costs nothing.
inline constexpr uint64_t kChunkBytes = 128 * 1024;
inline constexpr uint32_t kMaxSockets = 16;                           // data sockets per pair
inline constexpr uint64_t kHeartbeat = 0x74'61'65'62'63'63'6e'74ULL;  // "tnccbeat"
// For the header check both ends apply first (transports/net/wire.h). Frames carry no version
// of their own: the handshake agreed on it.
inline constexpr net::Protocol kHandshakeProtocol{"tcp handshake", kHandshakeMagic,
                                                  kProtocolVersion};
inline constexpr net::Protocol kFrameProtocol{"tcp frame", kFrameMagic, kProtocolVersion};

struct Handshake {
  uint64_t magic = kHandshakeMagic;
  uint32_t version = kProtocolVersion;
  int32_t rank = -1;  // the sender's rank
  uint64_t commHash = 0;
  uint32_t socketIndex = 0;  // which of the pair's sockets this is; nsocks: the control socket
  uint32_t nsocks = 0;       // how many data sockets the pair uses
};
static_assert(sizeof(Handshake) == 32);

struct FrameHeader {
  uint32_t magic = kFrameMagic;
  uint32_t chunkBytes = 0;  // payload following this header
  uint64_t tag = 0;
  uint64_t messageBytes = 0;
  uint64_t offset = 0;  // of the chunk within the message
};
static_assert(sizeof(FrameHeader) == 32);

// Empty when `header` is exactly the frame the receiver expects next: message `tag` of
// `messageBytes`, chunk [offset, +chunkBytes) of at most kChunkBytes; otherwise what differs.
// Pure, so
// fuzz/transport_records.cc drives it with arbitrary bytes.
std::string frameProblem(const FrameHeader& header, uint64_t tag, uint64_t messageBytes,
                         uint64_t offset, uint64_t chunkBytes);

// One rank's listener, as exchanged at setup. family 0: this rank does not listen (it has no
// lower-ranked tcp peer).
struct ListenAddress {
  int32_t ok = 0;       // setup so far succeeded on this rank
  uint32_t nsocks = 0;  // sockets per peer this rank asks for
  uint16_t port = 0;
  uint8_t family = 0;  // 4 or 6
  uint8_t reserved = 0;
  uint32_t scopeId = 0;  // IPv6 scope
  std::array<uint8_t, 16> bytes{};
  uint32_t livenessMs = 0;  // this rank's liveness timeout (0: it checks nothing)
  uint32_t reserved2 = 0;
};
static_assert(sizeof(ListenAddress) == 40);

}  // namespace trnccl::transport::tcp
