// Fuzz target: the checks a receiver applies to what a peer wrote before it uses a byte of it —
// the shm FIFO's records (transports/shm/record.h), and the TCP frame header and handshake
// (transports/tcp/wire.h, through the header check of transports/net/wire.h). Input: 32 bytes
// of record/frame/handshake, then 32 bytes of what the receiver posted (tag, message bytes,
// bytes received so far / chunk offset, ring bytes / chunk bytes).
// Properties: an accepted shm data record covers 1..(left) bytes, fits the ring if inline and
// its arena if an arena descriptor; an accepted header or frame is exactly the posted one, and
// a frame at most kChunkBytes; a handshake passes the header check exactly when its magic and
// version are the transport's.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "transports/shm/record.h"
#include "transports/tcp/wire.h"

namespace shm = trnccl::transport::shm;
namespace tcp = trnccl::transport::tcp;
namespace net = trnccl::transport::net;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 64) return 0;
  uint64_t posted[4];
  std::memcpy(posted, data + 32, sizeof(posted));

  shm::Record record;
  std::memcpy(&record, data, sizeof(record));
  // got <= bytes, as the receiver keeps it (posted[1] + 1 wraps to 0 for the largest value).
  const uint64_t got = posted[1] == UINT64_MAX ? posted[2] : posted[2] % (posted[1] + 1);
  shm::Expected expected{posted[0], posted[1], got, posted[3]};
  if (shm::beginRecordProblem(record, expected).empty()) {
    if (record.kind != static_cast<uint32_t>(shm::RecordKind::kBegin) || record.a != expected.tag ||
        record.bytes != expected.bytes) {
      std::abort();
    }
  }
  if (shm::dataRecordProblem(record, expected).empty()) {
    const uint64_t left = expected.bytes - expected.got;
    const auto kind = static_cast<shm::RecordKind>(record.kind);
    if (record.bytes == 0 || record.bytes > left || kind == shm::RecordKind::kBegin) std::abort();
    if (kind == shm::RecordKind::kInline &&
        (expected.ringBytes < shm::kRecordBytes ||
         record.bytes > expected.ringBytes - shm::kRecordBytes)) {
      std::abort();
    }
    if (kind == shm::RecordKind::kArena &&
        (record.a > record.b || record.a + record.bytes > record.b ||
         record.a + record.bytes < record.a)) {
      std::abort();
    }
  }

  tcp::FrameHeader frame;
  std::memcpy(&frame, data, sizeof(frame));
  if (tcp::frameProblem(frame, posted[0], posted[1], posted[2], posted[3]).empty()) {
    if (frame.magic != tcp::kFrameMagic || frame.tag != posted[0] ||
        frame.messageBytes != posted[1] || frame.offset != posted[2] ||
        frame.chunkBytes != posted[3] || frame.chunkBytes > tcp::kChunkBytes) {
      std::abort();
    }
  }

  tcp::Handshake hello;
  std::memcpy(&hello, data, sizeof(hello));
  bool ours = hello.magic == tcp::kHandshakeMagic && hello.version == tcp::kProtocolVersion;
  if (net::checkHeader(tcp::kHandshakeProtocol, {hello.magic, hello.version, 0}, 0).ok() != ours) {
    std::abort();
  }
  return 0;
}
